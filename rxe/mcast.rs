// SPDX-License-Identifier: GPL-2.0

//! The multicast groups of a device: which UD QPs are attached to which
//! group (`ib_attach_mcast`), and the device's IP membership of each.
//!
//! A group's GID is the IP multicast address its datagrams are sent to
//! (IPv4-mapped for IPv4 groups). The first QP attached to a group on a
//! device joins the IP group on the netdev (IGMP or MLD, so the host takes
//! its datagrams in, on the wire and, for its own sends, by the IP stack's
//! multicast loopback); the last one to leave, or to be destroyed, leaves
//! it. A datagram to QPN 0xFFFFFF on a device's netdev goes to every QP
//! attached to its destination group on that device, a copy each
//! (`net/recv.rs`). The limits are the C rxe's, and the device advertises
//! them.
//!
//! Locking: `change` (a mutex: joining an IP group sleeps) serialises
//! attach and detach, and is taken before `table` (an irq-safe spinlock,
//! read by the receive path in softirq).

use core::sync::atomic::{AtomicUsize, Ordering};

use kernel::error::code::{EINVAL, ENOMEM};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Mutex};

use rdma::provider::{net::NetDevice, sync::SpinLockIrq, Gid};

/// The most groups a device has (`RXE_MAX_MCAST_GRP`).
pub(crate) const MAX_GROUPS: usize = 8192;
/// The most QPs attached to one group (`RXE_MAX_MCAST_QP_ATTACH`).
pub(crate) const MAX_QPS_PER_GROUP: usize = 56;
/// The most attachments on a device (`RXE_MAX_TOT_MCAST_QP_ATTACH`).
pub(crate) const MAX_ATTACHED: usize = 0x70000;

/// The QPN of a multicast datagram.
pub(crate) const MULTICAST_QPN: u32 = 0xff_ffff;

struct Group {
    mgid: Gid,
    qpns: KVec<u32>,
}

/// The groups of one device.
#[pin_data]
pub(crate) struct Groups {
    /// Serialises attach and detach.
    #[pin]
    change: Mutex<()>,
    #[pin]
    table: SpinLockIrq<KVec<Group>>,
    /// Attachments on the device.
    attached: AtomicUsize,
}

impl Groups {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Groups {
            change <- new_mutex!((), "Groups::change"),
            table <- rdma::provider::new_spinlock_irq!(KVec::new(), "Groups::table"),
            attached: AtomicUsize::new(0),
        })
    }

    /// Attaches QP `qpn` to group `mgid`, joining the IP group on `netdev`
    /// when it is the group's first QP. `ENOMEM` beyond the limits. May
    /// sleep.
    pub(crate) fn attach(&self, netdev: &NetDevice, mgid: &Gid, qpn: u32) -> Result {
        let _change = self.change.lock();
        let exists = {
            let t = self.table.lock();
            match t.iter().find(|g| g.mgid == *mgid) {
                Some(g) if g.qpns.contains(&qpn) => return Ok(()),
                Some(g) if g.qpns.len() >= MAX_QPS_PER_GROUP => return Err(ENOMEM),
                Some(_) => true,
                None if t.len() >= MAX_GROUPS => return Err(ENOMEM),
                None => false,
            }
        };
        if self.attached.load(Ordering::Relaxed) >= MAX_ATTACHED {
            return Err(ENOMEM);
        }
        // Only attach and detach change the table, and they hold `change`:
        // what was found above still holds.
        if exists {
            let mut t = self.table.lock();
            if let Some(g) = t.iter_mut().find(|g| g.mgid == *mgid) {
                // Room for every QP was reserved when the group was made.
                g.qpns.push(qpn, GFP_ATOMIC)?;
            }
        } else {
            let mut qpns = KVec::with_capacity(MAX_QPS_PER_GROUP, GFP_KERNEL)?;
            qpns.push(qpn, GFP_KERNEL)?;
            netdev.multicast(&mgid.0, true)?;
            let pushed = self
                .table
                .lock()
                .push(Group { mgid: *mgid, qpns }, GFP_ATOMIC);
            if pushed.is_err() {
                let _ = netdev.multicast(&mgid.0, false);
                return Err(ENOMEM);
            }
        }
        self.attached.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Detaches QP `qpn` from group `mgid` (`EINVAL` if it was not
    /// attached), leaving the IP group when it was the last. May sleep.
    pub(crate) fn detach(&self, netdev: &NetDevice, mgid: &Gid, qpn: u32) -> Result {
        let _change = self.change.lock();
        let (found, last) = {
            let mut t = self.table.lock();
            let Some(i) = t.iter().position(|g| g.mgid == *mgid) else {
                return Err(EINVAL);
            };
            let found = rdma::provider::vec::remove_first(&mut t[i].qpns, |&q| q == qpn).is_some();
            let last = t[i].qpns.is_empty();
            let gone = if last {
                rdma::provider::vec::remove(&mut t, i)
            } else {
                None
            };
            drop(t);
            drop(gone);
            (found, last)
        };
        if !found {
            return Err(EINVAL);
        }
        self.attached.fetch_sub(1, Ordering::Relaxed);
        if last {
            // Leaving cannot fail in a way that could be undone here.
            let _ = netdev.multicast(&mgid.0, false);
        }
        Ok(())
    }

    /// Detaches QP `qpn` from every group (the QP is being destroyed). May
    /// sleep.
    pub(crate) fn detach_all(&self, netdev: &NetDevice, qpn: u32) {
        loop {
            let mgid = {
                let t = self.table.lock();
                t.iter().find(|g| g.qpns.contains(&qpn)).map(|g| g.mgid)
            };
            match mgid {
                Some(m) => {
                    let _ = self.detach(netdev, &m, qpn);
                }
                None => return,
            }
        }
    }

    /// Leaves every IP group (the device is going away). May sleep.
    pub(crate) fn leave_all(&self, netdev: &NetDevice) {
        let _change = self.change.lock();
        let all = core::mem::take(&mut *self.table.lock());
        for g in all.iter() {
            let _ = netdev.multicast(&g.mgid.0, false);
        }
        self.attached.store(0, Ordering::Relaxed);
    }

    /// The QPs attached to `mgid`, copied into `out`: how many (0 if the
    /// device has no such group). Any context.
    pub(crate) fn members(&self, mgid: &Gid, out: &mut [u32; MAX_QPS_PER_GROUP]) -> usize {
        let t = self.table.lock();
        let Some(g) = t.iter().find(|g| g.mgid == *mgid) else {
            return 0;
        };
        let n = g.qpns.len().min(MAX_QPS_PER_GROUP);
        out[..n].copy_from_slice(&g.qpns[..n]);
        n
    }
}
