// SPDX-License-Identifier: GPL-2.0

//! The CM's per-port counters, per message type: what the C stack shows
//! under `/sys/class/infiniband_cm/<dev>/<port>/{cm_tx_msgs, cm_rx_msgs,
//! cm_tx_retries, cm_rx_duplicates}/<msg>`, and their port groups in our
//! sysfs (`/sys/class/rdma_rs/<dev>/ports/<N>/cm_tx_msgs/req` and so on),
//! which the CM registers at init ([`register_sysfs`]); and the messages
//! it received and dropped, by reason, which the C stack does not count
//! (`ports/<N>/cm_rx_drops/<reason>`, [`DROP_NAMES`]).
//!
//! And, ours only, the bound on half-open connections (REQ received, not
//! yet established) in `/sys/class/rdma_rs/<dev>/ports/<N>/cm_half_open/`:
//! `current` (half-open now), `refused` (REQs answered with a REJ
//! NO_RESOURCES for the bound), `max_per_port` and `max_per_source`
//! ([`crate::cm::table::LIMITS`]).

use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use kernel::c_str;
use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use crate::device::sysfs::{PortGroup, PortGroupShow, PortGroupsRegistration};
use crate::device::Device;
use crate::kshim::sysfs::Page;
use crate::spec::mad::{CM_ATTR_APR, CM_ATTR_REQ};

/// Why a received CM MAD was dropped, in [`DROP_NAMES`] order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// A message of a known attribute that does not parse.
    Malformed = 0,
    /// An attribute ID that no CM message has.
    UnknownAttr = 1,
    /// A message the IBTA defines that this CM does not handle (LAP,
    /// APR).
    Unsupported = 2,
    /// A message other than a REQ for no connection of the port, or with
    /// the ID of one of ours but not its peer's (a DREQ is answered with a
    /// DREP, as the C CM does; the rest is dropped); or a SIDR REP that
    /// answers no SIDR REQ of ours (its request ID, sender and port).
    UnknownCommId = 3,
    /// A message for a live connection (both IDs its own) that its state
    /// does not take, or a DREQ naming another QPN, which the C CM drops
    /// without counting it as a duplicate.
    Unexpected = 4,
}

/// How many drop reasons there are.
pub const DROP_REASONS: usize = 5;

/// The names of the drop counters, by [`DropReason`].
pub const DROP_NAMES: [&CStr; DROP_REASONS] = [
    c_str!("malformed"),
    c_str!("unknown_attr"),
    c_str!("unsupported"),
    c_str!("unknown_comm_id"),
    c_str!("unexpected"),
];

/// The message types, in attribute ID order from REQ (0x10) to APR
/// (0x1a), by the names of the C stack's sysfs files.
pub const MSG_NAMES: [&CStr; 11] = [
    c_str!("req"),
    c_str!("mra"),
    c_str!("rej"),
    c_str!("rep"),
    c_str!("rtu"),
    c_str!("dreq"),
    c_str!("drep"),
    c_str!("sidr_req"),
    c_str!("sidr_rep"),
    c_str!("lap"),
    c_str!("apr"),
];

/// The four groups of counters, by the names of the C stack's folders.
pub const GROUP_NAMES: [&CStr; 4] = [
    c_str!("cm_tx_msgs"),
    c_str!("cm_tx_retries"),
    c_str!("cm_rx_msgs"),
    c_str!("cm_rx_duplicates"),
];

/// The files of the half-open group.
pub const HALF_OPEN_NAMES: [&CStr; 4] = [
    c_str!("current"),
    c_str!("refused"),
    c_str!("max_per_port"),
    c_str!("max_per_source"),
];

/// Index of the drops group among the port groups.
const DROPS_GROUP: usize = GROUP_NAMES.len();
/// Index of the half-open group among the port groups.
const HALF_OPEN_GROUP: usize = GROUP_NAMES.len() + 1;

/// The groups as port groups of sysfs, in [`Group`] order, each with a
/// file per message type; then the drops, a file per reason.
static PORT_GROUPS: [PortGroup; 6] = [
    PortGroup {
        name: GROUP_NAMES[0],
        files: &MSG_NAMES,
    },
    PortGroup {
        name: GROUP_NAMES[1],
        files: &MSG_NAMES,
    },
    PortGroup {
        name: GROUP_NAMES[2],
        files: &MSG_NAMES,
    },
    PortGroup {
        name: GROUP_NAMES[3],
        files: &MSG_NAMES,
    },
    PortGroup {
        name: c_str!("cm_rx_drops"),
        files: &DROP_NAMES,
    },
    PortGroup {
        name: c_str!("cm_half_open"),
        files: &HALF_OPEN_NAMES,
    },
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
    drops: [AtomicU64; DROP_REASONS],
    /// REQs refused for the bound on half-open connections, and SIDR
    /// REQs dropped for the bound on those waiting for their answer.
    no_resources: AtomicU64,
}

impl Default for CmCounters {
    fn default() -> Self {
        CmCounters {
            c: [const { [const { AtomicU64::new(0) }; 11] }; 4],
            drops: [const { AtomicU64::new(0) }; DROP_REASONS],
            no_resources: AtomicU64::new(0),
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

    /// Counts a message dropped for `reason`.
    pub fn count_drop(&self, reason: DropReason) {
        if let Some(c) = self.drops.get(reason as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The messages dropped for `reason`.
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.drops
            .get(reason as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Counts a REQ refused for the bound on half-open connections.
    pub fn count_no_resources(&self) {
        self.no_resources.fetch_add(1, Ordering::Relaxed);
    }

    /// The REQs refused for the bound on half-open connections.
    pub fn no_resources(&self) -> u64 {
        self.no_resources.load(Ordering::Relaxed)
    }

    /// The count at `(group, index)` of [`GROUP_NAMES`] and [`MSG_NAMES`]
    /// (group 4: the drops, by [`DROP_NAMES`]).
    pub fn get_at(&self, group: usize, index: usize) -> u64 {
        let c = if group == DROPS_GROUP {
            self.drops.get(index)
        } else {
            self.c.get(group).and_then(|g| g.get(index))
        };
        c.map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

/// What the counter files show: the count, or zero where the CM does not
/// run (yet, or any more) on the port.
struct CounterFiles;

impl PortGroupShow for CounterFiles {
    /// Every port with a MAD layer, where the CM runs.
    fn wants(&self, dev: &Device, port: u32) -> bool {
        dev.has_mad(port)
    }

    fn show(&self, dev: &Device, port: u32, group: usize, file: usize, out: &mut Page) -> Result {
        let v = if group == HALF_OPEN_GROUP {
            let limits = crate::cm::table::LIMITS;
            match file {
                0 => crate::cm::port::shared(dev, port)
                    .map_or(0, |p| u64::from(crate::cm::table::half_open(&p))),
                1 => crate::cm::port::counters(dev, port).map_or(0, |c| c.no_resources()),
                2 => u64::from(limits.per_port),
                _ => u64::from(limits.per_source),
            }
        } else {
            crate::cm::port::counters(dev, port).map_or(0, |c| c.get_at(group, file))
        };
        writeln!(out, "{}", v).map_err(|_| EINVAL)
    }
}

/// Registers the counters' port groups (module init; dropped at exit).
pub(crate) fn register_sysfs() -> Result<PortGroupsRegistration> {
    crate::device::sysfs::register_port_groups(&PORT_GROUPS, Arc::new(CounterFiles, GFP_KERNEL)?)
}
