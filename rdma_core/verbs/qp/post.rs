// SPDX-License-Identifier: GPL-2.0

//! Posting work requests (`ib_post_send`, `ib_post_recv`): each request
//! is checked against the QP's type, state and capabilities, its memory
//! keys and lengths, then copied into the ring as a queue entry, and the
//! provider is told.

use kernel::error::code::{EINVAL, ENOMEM};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::DeviceCaps;
use crate::kshim::errno::eopnotsupp;
use crate::spec::opcodes::{SendFlags, WrOpcode};
use crate::spec::qp_state::{QpState, QpType};
use crate::verbs::mr::MrKind;
use crate::verbs::qp::{ProviderQp, QpCore, TM_JOBS};
use crate::verbs::wr::{RecvWr, SendOp, SendWqe, SendWr, TmJob, UdWqe, MAX_INLINE, MAX_SGE};

impl QpCore {
    /// Posts send work requests (`ib_post_send`); on error, the index of
    /// the first request not posted and why. Any context; never sleeps.
    pub fn post_send(
        self: &Arc<Self>,
        wrs: &[SendWr<'_>],
    ) -> core::result::Result<(), (usize, Error)> {
        let _verb = crate::kshim::verb::Verb::enter();
        let ops = self.ops.access().ok_or((0, ENODEV))?;
        let state = self.state();
        if matches!(state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err((0, EINVAL));
        }
        let attr_port = self.attr.lock().port_num;
        let mut result = Ok(());
        {
            let mut sq = self.sq.lock();
            // The ring's room for the core's rendezvous steps is not the
            // ULP's.
            let ulp_room = sq.ring.limit() - if self.has_tm_srq() { TM_JOBS } else { 0 };
            for (i, wr) in wrs.iter().enumerate() {
                let r = if sq.ring.len() - sq.internal >= ulp_room {
                    Err(ENOMEM)
                } else {
                    match sq.ring.next_slot() {
                        Ok(slot) => self.fill_send(slot, wr, attr_port),
                        Err(e) => Err(e),
                    }
                };
                if let Err(e) = r {
                    result = Err((i, e));
                    break;
                }
                sq.ring.commit();
            }
        }
        // The requests before a bad one are posted: ring for them.
        if !matches!(result, Err((0, _))) {
            if state == QpState::Err {
                self.flush();
            } else {
                ops.post_send(&ProviderQp::new(self.clone()));
            }
        }
        result
    }

    fn fill_send(&self, w: &mut SendWqe, wr: &SendWr<'_>, port: u32) -> Result {
        self.fill_send_from(w, wr, port, None)
    }

    /// Checks `wr` and fills `w` from it; `user_inline` is the inline data
    /// of a user ring's entry, carried in the entry itself (`wr.sg` is
    /// then empty).
    pub(super) fn fill_send_from(
        &self,
        w: &mut SendWqe,
        wr: &SendWr<'_>,
        _port: u32,
        user_inline: Option<&[u8]>,
    ) -> Result {
        let op = wr.op.opcode();
        if !op.allowed_on(self.qp_type) || wr.flags.has_unknown() {
            return Err(EINVAL);
        }
        let caps = self.device().attr().cap_flags;
        if matches!(
            op,
            WrOpcode::SendWithInv
                | WrOpcode::LocalInv
                | WrOpcode::RegMr
                | WrOpcode::RdmaReadWithInv
        ) && !caps.contains(DeviceCaps::MEM_MGT_EXTENSIONS)
        {
            return Err(eopnotsupp());
        }
        if op == WrOpcode::BindMw && !caps.contains(DeviceCaps::MEM_WINDOW) {
            return Err(eopnotsupp());
        }
        let inline =
            (user_inline.is_some() || wr.flags.contains(SendFlags::INLINE)) && op.gathers();
        if user_inline.is_some() && !inline {
            return Err(EINVAL);
        }
        if !inline && (wr.sg.len() > self.cap.max_send_sge as usize || wr.sg.len() > MAX_SGE) {
            return Err(EINVAL);
        }
        let length = match user_inline {
            Some(bytes) => u32::try_from(bytes.len()).map_err(|_| EINVAL)?,
            None => crate::verbs::mr::sge_len(wr.sg)?,
        };
        if (op.is_atomic() || op == WrOpcode::AtomicWrite) && length != 8 {
            return Err(EINVAL);
        }
        // Checks the operation's own values first.
        match wr.op {
            SendOp::Flush { flush, .. } => {
                if !flush.global && !flush.persistent {
                    return Err(EINVAL);
                }
            }
            SendOp::AtomicWrite { remote_addr, .. }
            | SendOp::CmpAndSwp { remote_addr, .. }
            | SendOp::FetchAndAdd { remote_addr, .. } => {
                if remote_addr % 8 != 0 {
                    return Err(EINVAL);
                }
            }
            SendOp::RegMr { mr, key, access } => {
                if mr.kind() != MrKind::FastReg
                    || !core::ptr::eq(&**mr.pd(), &*self.pd)
                    || key >> 8 != mr.lkey() >> 8
                    || !access.check()
                {
                    return Err(EINVAL);
                }
            }
            SendOp::BindMw { mw, mr, .. } => {
                crate::verbs::mw::check_bind_request(mw, mr, &self.pd)?;
            }
            _ => {}
        }
        w.ud = None;
        if matches!(self.qp_type, QpType::Ud | QpType::Gsi) {
            let ud = wr.ud.as_ref().ok_or(EINVAL)?;
            if !core::ptr::eq(&**ud.ah.pd(), &*self.pd) || ud.remote_qpn >= 1 << 24 {
                return Err(EINVAL);
            }
            w.ud = Some(UdWqe {
                ah: ud.ah.clone(),
                remote_qpn: ud.remote_qpn,
                remote_qkey: ud.remote_qkey,
            });
        }
        w.wr_id = wr.wr_id;
        w.cqe = wr.cqe.clone();
        w.op = wr.op.to_wqe_op();
        w.flags = wr.flags;
        w.signaled = self.sq_sig_all || wr.flags.contains(SendFlags::SIGNALED);
        w.tm = TmJob::None;
        w.length = length;
        w.inline = inline;
        if inline {
            // ATOMIC_WRITE's 8 bytes are its operand, not inline data the
            // QP was sized for (a user ring carries them in the entry).
            let capped = op != WrOpcode::AtomicWrite && length > self.cap.max_inline_data;
            if capped || length as usize > MAX_INLINE {
                return Err(EINVAL);
            }
            w.num_sge = 0;
            match user_inline {
                Some(bytes) => w.inline_data[..bytes.len()].copy_from_slice(bytes),
                None => crate::verbs::mr::gather(
                    self.device(),
                    &self.pd,
                    wr.sg,
                    0,
                    &mut w.inline_data[..length as usize],
                )
                .map_err(|_| EINVAL)?,
            }
        } else {
            w.num_sge = wr.sg.len();
            w.sge[..wr.sg.len()].copy_from_slice(wr.sg);
        }
        Ok(())
    }

    /// Posts receive work requests (`ib_post_recv`). Any context; never
    /// sleeps. `EINVAL` in RESET or with an SRQ.
    pub fn post_recv(
        self: &Arc<Self>,
        wrs: &[RecvWr<'_>],
    ) -> core::result::Result<(), (usize, Error)> {
        let _verb = crate::kshim::verb::Verb::enter();
        let ops = self.ops.access().ok_or((0, ENODEV))?;
        let state = self.state();
        if state == QpState::Reset || self.srq.is_some() {
            return Err((0, EINVAL));
        }
        let mut result = Ok(());
        {
            let mut rq = self.rq.lock();
            for (i, wr) in wrs.iter().enumerate() {
                let r = match rq.ring.next_slot() {
                    Ok(slot) => slot.fill(wr, self.cap.max_recv_sge),
                    Err(e) => Err(e),
                };
                if let Err(e) = r {
                    result = Err((i, e));
                    break;
                }
                rq.ring.commit();
            }
        }
        if !matches!(result, Err((0, _))) {
            if state == QpState::Err {
                self.flush();
            } else {
                ops.post_recv(&ProviderQp::new(self.clone()));
            }
        }
        result
    }
}
