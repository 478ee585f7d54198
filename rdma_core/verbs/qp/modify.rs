// SPDX-License-Identifier: GPL-2.0

//! Changing a QP's state and attributes (`ib_modify_qp`, `ib_query_qp`)
//! and its multicast groups (`ib_attach_mcast`, `ib_detach_mcast`).
//!
//! A `modify_qp` is checked by the state machine of
//! [`rdma::spec::qp_state`](crate::spec::qp_state) (which attributes the
//! transition requires and accepts), then each value against the device,
//! then offered to the provider ([`QpOps::modify`]), and committed only if
//! all agree. Entering the error state flushes the queues; RESET empties
//! them.

use core::sync::atomic::Ordering;
use kernel::error::code::{EINVAL, ENODEV};

use kernel::prelude::*;
use kernel::sync::Arc;

use crate::kshim::errno::eopnotsupp;
use crate::spec::attr::Gid;
use crate::spec::opcodes::Access;
use crate::spec::qp_state::{check_modify, AttrMask, QpState, QpType};
use crate::verbs::qp::{ProviderQp, QpAttr, QpCore, MAX_MCAST};

impl QpCore {
    /// Empties the queues without completions (to RESET).
    pub(super) fn reset_queues(&self) {
        loop {
            let w = {
                let mut sq = self.sq.lock();
                sq.started = 0;
                sq.err = false;
                let Some(w) = sq.ring.pop() else {
                    sq.internal = 0;
                    if let Some(u) = sq.user.as_mut() {
                        u.discard_taken();
                    }
                    break;
                };
                w
            };
            self.drop_tm_job(&w);
        }
        loop {
            let mut rq = self.rq.lock();
            rq.err = false;
            if rq.ring.pop().is_none() {
                break;
            }
        }
    }

    /// Checks the values of the attributes in `mask`.
    fn check_values(&self, attr: &QpAttr, mask: AttrMask) -> Result {
        let dev = self.device();
        let a = dev.attr();
        let port = if mask.contains(AttrMask::PORT) {
            dev.check_port(attr.port_num)?;
            attr.port_num
        } else {
            self.attr.lock().port_num
        };
        if mask.contains(AttrMask::PKEY_INDEX) && u32::from(attr.pkey_index) >= dev.pkey_tbl_len() {
            return Err(EINVAL);
        }
        if mask.contains(AttrMask::AV) {
            attr.ah_attr.check(dev)?;
        }
        if mask.contains(AttrMask::PATH_MTU) {
            let pa = dev.query_port(port)?;
            if attr.path_mtu > pa.max_mtu {
                return Err(EINVAL);
            }
        }
        if mask.contains(AttrMask::MAX_QP_RD_ATOMIC)
            && u32::from(attr.max_rd_atomic) > a.max_qp_init_rd_atom
        {
            return Err(EINVAL);
        }
        if mask.contains(AttrMask::MAX_DEST_RD_ATOMIC)
            && u32::from(attr.max_dest_rd_atomic) > a.max_qp_rd_atom
        {
            return Err(EINVAL);
        }
        if mask.contains(AttrMask::ACCESS_FLAGS)
            && attr.qp_access_flags.0 & !(Access::QP_REMOTE.0 | Access::LOCAL_WRITE.0) != 0
        {
            return Err(EINVAL);
        }
        let small = |m: AttrMask, v: u8, max: u8| !mask.contains(m) || v <= max;
        if !small(AttrMask::RETRY_CNT, attr.retry_cnt, 7)
            || !small(AttrMask::RNR_RETRY, attr.rnr_retry, 7)
            || !small(AttrMask::MIN_RNR_TIMER, attr.min_rnr_timer, 31)
            || !small(AttrMask::TIMEOUT, attr.timeout, 31)
        {
            return Err(EINVAL);
        }
        let psn_ok = |m: AttrMask, v: u32| !mask.contains(m) || v < 1 << 24;
        if !psn_ok(AttrMask::SQ_PSN, attr.sq_psn)
            || !psn_ok(AttrMask::RQ_PSN, attr.rq_psn)
            || !psn_ok(AttrMask::DEST_QPN, attr.dest_qp_num)
        {
            return Err(EINVAL);
        }
        if mask.contains(AttrMask::CAP) || mask.contains(AttrMask::RATE_LIMIT) {
            return Err(eopnotsupp());
        }
        Ok(())
    }

    /// Modifies the QP (`ib_modify_qp`): the transition and the attribute
    /// mask are checked against the IBTA state machine, each attribute's
    /// value against the device, then the provider agrees and the change is
    /// committed. `EINVAL` for any refusal. May sleep.
    pub fn modify(self: &Arc<Self>, attr: &QpAttr, mask: AttrMask) -> Result {
        crate::kshim::verb::might_sleep();
        let ops = self.ops.access().ok_or(ENODEV)?;
        let _serial = self.modify_lock.lock();
        let cur = if mask.contains(AttrMask::CUR_STATE) {
            attr.cur_qp_state
        } else {
            self.state()
        };
        let next = if mask.contains(AttrMask::STATE) {
            attr.qp_state
        } else {
            cur
        };
        if let Err(e) = check_modify(cur, next, self.qp_type, mask) {
            pr_debug!(
                "QP {}: modify {:?} -> {:?} refused: {:?}\n",
                self.qpn,
                cur,
                next,
                e
            );
            return Err(EINVAL);
        }
        self.check_values(attr, mask)?;
        ops.modify(&ProviderQp::new(self.clone()), attr, mask)?;
        let drained = {
            let mut a = self.attr.lock();
            let m = |bit: AttrMask| mask.contains(bit);
            if m(AttrMask::EN_SQD_ASYNC_NOTIFY) {
                a.en_sqd_async_notify = attr.en_sqd_async_notify;
            }
            if m(AttrMask::ACCESS_FLAGS) {
                a.qp_access_flags = attr.qp_access_flags;
            }
            if m(AttrMask::PKEY_INDEX) {
                a.pkey_index = attr.pkey_index;
            }
            if m(AttrMask::PORT) {
                a.port_num = attr.port_num;
            }
            if m(AttrMask::QKEY) {
                a.qkey = attr.qkey;
            }
            if m(AttrMask::AV) {
                a.ah_attr = attr.ah_attr;
            }
            if m(AttrMask::PATH_MTU) {
                a.path_mtu = attr.path_mtu;
            }
            if m(AttrMask::TIMEOUT) {
                a.timeout = attr.timeout;
            }
            if m(AttrMask::RETRY_CNT) {
                a.retry_cnt = attr.retry_cnt;
            }
            if m(AttrMask::RNR_RETRY) {
                a.rnr_retry = attr.rnr_retry;
            }
            if m(AttrMask::RQ_PSN) {
                a.rq_psn = attr.rq_psn;
            }
            if m(AttrMask::MAX_QP_RD_ATOMIC) {
                a.max_rd_atomic = attr.max_rd_atomic;
            }
            if m(AttrMask::MIN_RNR_TIMER) {
                a.min_rnr_timer = attr.min_rnr_timer;
            }
            if m(AttrMask::SQ_PSN) {
                a.sq_psn = attr.sq_psn;
            }
            if m(AttrMask::MAX_DEST_RD_ATOMIC) {
                a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
            }
            if m(AttrMask::DEST_QPN) {
                a.dest_qp_num = attr.dest_qp_num;
            }
            a.qp_state = next;
            a.sq_draining = next == QpState::Sqd;
            next == QpState::Sqd && self.sq.lock().ring.len() == 0
        };
        let old = self.state.swap(next.as_raw(), Ordering::AcqRel);
        match next {
            QpState::Err if old != QpState::Err.as_raw() => self.entered_error(),
            QpState::Reset => {
                self.reset_queues();
                let mut a = self.attr.lock();
                *a = QpAttr {
                    port_num: a.port_num,
                    ..QpAttr::default()
                };
            }
            QpState::Sqd if drained => self.sq_drained(),
            _ => {}
        }
        Ok(())
    }

    /// The attributes and queue sizes (`ib_query_qp`). May sleep.
    pub fn query(&self) -> Result<QpAttr> {
        crate::kshim::verb::might_sleep();
        let mut a = *self.attr.lock();
        a.qp_state = self.state();
        a.cur_qp_state = a.qp_state;
        a.cap = self.cap;
        Ok(a)
    }

    /// Joins a multicast group (`ib_attach_mcast`): UD QPs only, a
    /// multicast GID (IPv6 multicast, or IPv4-mapped multicast as RoCE v2
    /// uses for IPv4 groups). May sleep.
    pub fn attach_mcast(self: &Arc<Self>, gid: &Gid) -> Result {
        crate::kshim::verb::might_sleep();
        if self.qp_type != QpType::Ud || !gid.is_multicast() {
            return Err(EINVAL);
        }
        let ops = self.ops.access().ok_or(ENODEV)?;
        let mut groups = self.mcast.lock();
        if groups.iter().any(|g| g == gid) {
            return Ok(());
        }
        if groups.len() >= MAX_MCAST {
            return Err(ENOMEM);
        }
        groups.reserve(1, GFP_KERNEL)?;
        ops.mcast(&ProviderQp::new(self.clone()), gid, true)?;
        groups.push(*gid, GFP_KERNEL)?;
        Ok(())
    }

    /// Leaves a multicast group (`ib_detach_mcast`): `EINVAL` if the QP is
    /// not in it. May sleep.
    pub fn detach_mcast(self: &Arc<Self>, gid: &Gid) -> Result {
        crate::kshim::verb::might_sleep();
        let ops = self.ops.access().ok_or(ENODEV)?;
        let mut groups = self.mcast.lock();
        crate::kshim::vec::remove_first(&mut groups, |g| g == gid).ok_or(EINVAL)?;
        ops.mcast(&ProviderQp::new(self.clone()), gid, false)
    }

    /// Whether the QP is in multicast group `gid` (for providers).
    pub fn in_mcast(&self, gid: &Gid) -> bool {
        self.mcast.lock().iter().any(|g| g == gid)
    }

    pub(super) fn reset_queues_keep_err(&self) {
        loop {
            let w = self.sq.lock().ring.pop();
            let Some(w) = w else { break };
            self.drop_tm_job(&w);
        }
        self.sq.lock().internal = 0;
        while self.rq.lock().ring.pop().is_some() {}
    }
}
