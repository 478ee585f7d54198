// SPDX-License-Identifier: GPL-2.0

//! Rate limits of log lines that a peer or a faulty party can provoke at
//! will (a malformed MAD, a failed send), so that they cannot flood the
//! kernel log.

use crate::kshim::bindings;

/// Whether a log line of the management layers and the ULPs above them
/// (MAD, CM, peer memory, RTRS) may be printed now: at most 10 every 5
/// seconds, shared by all of them. Any context.
pub fn log_allowed() -> bool {
    // SAFETY: `__ratelimit` on a static state of the helper, which takes
    // its own lock; callable from any context.
    unsafe { bindings::rdma_rs_ratelimit_mgmt() }
}
