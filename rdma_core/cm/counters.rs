// SPDX-License-Identifier: GPL-2.0

//! The CM's per-port counters, per message type: what the C stack shows
//! under `/sys/class/infiniband_cm/<dev>/<port>/{cm_tx_msgs, cm_rx_msgs,
//! cm_tx_retries, cm_rx_duplicates}/<msg>`.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::spec::mad::{CM_ATTR_APR, CM_ATTR_REQ};

/// The message types, in attribute ID order from REQ (0x10) to APR
/// (0x1a), by the names of the C stack's sysfs files.
pub const MSG_NAMES: [&str; 11] = [
    "req", "mra", "rej", "rep", "rtu", "dreq", "drep", "sidr_req", "sidr_rep", "lap", "apr",
];

/// The four groups of counters, by the names of the C stack's folders.
pub const GROUP_NAMES: [&str; 4] = [
    "cm_tx_msgs",
    "cm_tx_retries",
    "cm_rx_msgs",
    "cm_rx_duplicates",
];

/// Which group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Messages sent (first sends).
    TxMsgs = 0,
    /// Messages sent again.
    TxRetries = 1,
    /// Messages received.
    RxMsgs = 2,
    /// Messages received again (duplicates).
    RxDuplicates = 3,
}

/// One port's counters.
pub struct CmCounters {
    c: [[AtomicU64; 11]; 4],
}

impl Default for CmCounters {
    fn default() -> Self {
        CmCounters {
            c: [const { [const { AtomicU64::new(0) }; 11] }; 4],
        }
    }
}

impl CmCounters {
    /// Counts one message of attribute ID `attr_id` in `group`; IDs
    /// outside REQ..APR are not counted.
    pub fn count(&self, group: Group, attr_id: u16) {
        if let Some(c) = (CM_ATTR_REQ..=CM_ATTR_APR)
            .contains(&attr_id)
            .then(|| self.c[group as usize].get(usize::from(attr_id - CM_ATTR_REQ)))
            .flatten()
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The count of message `attr_id` in `group` (0 outside REQ..APR).
    pub fn get(&self, group: Group, attr_id: u16) -> u64 {
        attr_id
            .checked_sub(CM_ATTR_REQ)
            .and_then(|i| self.c[group as usize].get(usize::from(i)))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// The count at `(group, index)` of [`GROUP_NAMES`] and [`MSG_NAMES`].
    pub fn get_at(&self, group: usize, index: usize) -> u64 {
        self.c
            .get(group)
            .and_then(|g| g.get(index))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}
