// SPDX-License-Identifier: GPL-2.0

//! Packets in and out over RoCE v2.
//!
//! - [`sockets`]: the UDP sockets (port 4791, IPv4 and IPv6) of each network
//!   namespace with an rxe device.
//! - [`fault`]: fault injection on a device's packets, for tests.
//! - [`frame`]: what both directions share: the largest payload, the
//!   ICRC's CRC, the GIDs of an IP header.
//! - [`recv`]: a received frame, parsed as hostile input, to its device and
//!   QP.
//! - [`xmit`]: a built packet out through its route, or straight to a device
//!   of ours on the same host (the loopback path).

pub(crate) mod fault;
pub(crate) mod frame;
pub(crate) mod recv;
pub(crate) mod sockets;
pub(crate) mod xmit;
