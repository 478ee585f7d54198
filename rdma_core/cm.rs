// SPDX-License-Identifier: GPL-2.0

//! The InfiniBand connection manager (`cm.c` of the C core), on the MAD
//! layer.
//!
//! C header: [`include/rdma/ib_cm.h`](srctree/include/rdma/ib_cm.h)
//!
//! The CM is an internal client of the core, registered after the MAD
//! layer ([`crate::mad`]): for every port with a MAD layer it registers a
//! MAD agent of the CM class (0x07, version 2) and keeps the port's
//! counters ([`counters::CmCounters`], the C stack's `cm_tx_msgs`,
//! `cm_rx_msgs`, `cm_tx_retries` and `cm_rx_duplicates`), which it shows in
//! sysfs as port groups it registers itself at init
//! ([`crate::device::sysfs::register_port_groups`]).
//!
//! What the CM does today with a message no connection of ours takes, as
//! the C CM does:
//!
//! - a REQ for a GID the port does not have: REJ, reason INVALID_GID (12),
//!   with the GID as additional information;
//! - a REQ from a QP (and node) a connection of ours still holds, timewait
//!   included: REJ, reason STALE_CONN (10), and that connection, if
//!   established, is disconnected (a DREQ), as the C CM does;
//! - a REQ for a service ID nobody listens on: REJ, reason
//!   INVALID_SERVICE_ID (8), to the REQ's sender with its transaction ID;
//! - a DREQ for a connection we do not know: a DREP, so that the peer's
//!   disconnect ends without waiting for its retries;
//! - a SIDR REQ for a service ID nobody listens on: a SIDR REP of status
//!   UNSUPPORTED (this CM resolves no service IDs);
//! - anything else (REP, REJ, MRA, RTU, DREP for no connection; SIDR REP,
//!   LAP, APR) is dropped;
//! - a message with the communication ID of a connection of ours but not
//!   its peer's (by the C CM's lookup rules, `cm_state::Conn::takes`) is
//!   one for no connection: the connection never sees it.
//!
//! Every dropped message is counted by reason (`cm_rx_drops`), never
//! logged: a peer can send any number of them.
//!
//! A connection end ([`conn::CmConn`]) wraps the host-tested state
//! machine `crate::spec::cm_state`; [`table`] holds the connections and
//! the listeners by service ID and runs their deadlines; the rdma_cm API
//! for ULPs is [`crate::cma`] (`Documentation/cm.rst` has all of it).
//!
//! # Locking
//!
//! The CM's handlers run from the MAD layer's work (process context) with
//! no CM lock held while they send. The table's lock comes before a
//! connection's; a connection's user is called with neither held.

pub mod conn;
pub mod counters;
pub mod port;
pub mod table;

pub use counters::CmCounters;

pub(crate) use port::{exit, init};
