// SPDX-License-Identifier: GPL-2.0

//! The transports over RoCE v2.
//!
//! - [`ud`]: unreliable datagram: SEND out, received datagrams to their QP.
//! - [`rc`]: the per-QP state of the connected transports (RC and UC) and
//!   how the three engines below share it.
//! - [`req`]: the requester: send WQEs to request packets.
//! - [`comp`]: the completer (RC): ACKs, NAKs, READ and atomic responses to
//!   completions, retransmission and its timers.
//! - [`resp`]: the responder: request packets to memory, receive
//!   completions and responses.

pub(crate) mod comp;
pub(crate) mod rc;
pub(crate) mod req;
pub(crate) mod resp;
pub(crate) mod ud;
