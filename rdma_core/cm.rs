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
//!   UNSUPPORTED; for one whose listeners all refuse it: REJECT (SIDR
//!   below);
//! - anything else (REP, REJ, MRA, RTU, DREP for no connection; a SIDR
//!   REP that answers no SIDR REQ of ours; LAP, APR) is dropped;
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
//! # Service ID resolution (SIDR)
//!
//! [`sidr`] resolves a service ID to a UD QP (IBA 12.11; cm.c's
//! `ib_send_cm_sidr_req`, `ib_send_cm_sidr_rep` and their handlers), on
//! the wire as the C CM:
//!
//! - Active: [`sidr::CmSidr::send_req`]`(port, to, &SidrReqParams {
//!   service_id, pkey, private_data, timeout_ms, max_retries }, user)`
//!   sends a SIDR REQ (at most 216 bytes of private data; the rdma_cm
//!   puts its 36-byte header first, as in a REQ) through `port`'s CM
//!   ([`port::shared`]`(dev, port_num)`) to the CM at `to` (a
//!   [`crate::mad::MadAddr`] as a REQ's: the path's address, remote QPN
//!   1). The MAD layer resends it every `timeout_ms` up to `max_retries`
//!   times. The [`sidr::SidrUser`] gets one [`sidr::SidrEvent`]:
//!   `Rep(SidrReply { status, qpn, qkey, private_data, .. })` for the
//!   SIDR REP with its request ID from that peer on that port, or
//!   `Timeout` (no REP after the retries, the send failed, or the device
//!   went). Dropping the [`sidr::CmSidr`] cancels it: no event after the
//!   drop returns (the event handler itself may drop it).
//! - Passive: a listener ([`table::Listener`]) takes REQs through
//!   [`table::ListenUser::takes`] and [`table::ListenUser::on_req`] and
//!   SIDR REQs through [`table::ListenUser::takes_sidr`] and
//!   [`table::ListenUser::on_sidr_req`], whose defaults take none (such a
//!   listener's SIDR REQs are answered REJECT, as the C rdma_cm answers
//!   one that reaches a listener of another QP type). A SIDR REQ taken
//!   comes as an `Arc<`[`sidr::SidrRequest`]`>` (request ID, service ID,
//!   P_Key, private data, the sender's address, the port): the user
//!   answers it once with [`sidr::SidrRequest::sidr_reply`]`(status, qpn,
//!   qkey, private_data)` (a second answer is `EINVAL`), now or later;
//!   dropped unanswered, it is answered REJECT. While it waits, resends of
//!   it (same request ID, sender and port) are dropped and counted in
//!   `cm_rx_duplicates/sidr_req`, as the C CM counts them; at most 4096
//!   wait on a port (beyond, new ones are dropped and counted in
//!   `cm_half_open/refused`).
//! - Counters, as the C CM's: `cm_tx_msgs/sidr_req` and `sidr_rep` for
//!   the first sends, `cm_tx_retries/sidr_req` for resends,
//!   `cm_rx_msgs/sidr_req` and `sidr_rep` for what arrives.
//!
//! # Locking
//!
//! The CM's handlers run from the MAD layer's work (process context) with
//! no CM lock held while they send. The table's lock comes before a
//! connection's; a connection's user is called with neither held. A SIDR
//! REQ of ours has its own lock (its user and whether its event is being
//! delivered), never held with the table's; its user is called with no
//! CM lock held. The MAD agent's lock is taken under neither.

pub mod conn;
pub mod counters;
pub mod port;
pub mod sidr;
pub mod table;

pub use counters::CmCounters;

pub(crate) use port::{exit, init};
