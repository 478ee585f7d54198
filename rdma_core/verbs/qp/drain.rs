// SPDX-License-Identifier: GPL-2.0

//! Draining a QP (`ib_drain_qp`): to the error state, then wait until the
//! completion of a marker request posted last on each queue has been
//! handled, so every request posted before it has been too.

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::{new_condvar, Arc, CondVar};

use crate::kshim::sync::SpinLockIrq;
use crate::spec::opcodes::SendFlags;
use crate::spec::qp_state::{AttrMask, QpState, QpType};
use crate::verbs::cq::{CqCore, PollCtx};
use crate::verbs::qp::{QpAttr, QpCore};
use crate::verbs::wc::{CqeDone, Wc};
use crate::verbs::wr::{RecvWr, SendOp, SendWr};

impl QpCore {
    /// Drains the QP (`ib_drain_qp`): moves it to the error state and
    /// returns once the completions of every request posted before have
    /// been handled. Needs CQs made with `Cq::alloc`; Direct CQs are polled
    /// here. With an SRQ only the send queue is drained. May sleep.
    pub fn drain(self: &Arc<Self>) -> Result {
        crate::kshim::verb::might_sleep();
        let core = self;
        let usable = |cq: &CqCore| cq.poll_ctx().is_some();
        if !usable(&core.send_cq) || !usable(&core.recv_cq) {
            return Err(EINVAL);
        }
        if core.state() != QpState::Err {
            let attr = QpAttr {
                qp_state: QpState::Err,
                ..QpAttr::default()
            };
            core.modify(&attr, AttrMask::STATE)?;
        }
        let marker = Arc::pin_init(DrainMarker::new(), GFP_KERNEL)?;
        let cqe: Arc<dyn CqeDone> = marker.clone();
        let wr = SendWr {
            wr_id: u64::MAX,
            cqe: Some(cqe.clone()),
            op: SendOp::Send,
            flags: SendFlags::SIGNALED,
            sg: &[],
            ud: None,
        };
        // In ERR, posting flushes at once; a UD QP needs no AH for that,
        // but the check wants one: drain the SQ of UD QPs by waiting for
        // the flush of what is there (already done by the modify).
        let mut want = 0;
        if !matches!(core.qp_type, QpType::Ud | QpType::Gsi) {
            core.post_send(&[wr]).map_err(|(_, e)| e)?;
            want += 1;
        }
        if core.srq.is_none() {
            core.post_recv(&[RecvWr {
                wr_id: u64::MAX,
                cqe: Some(cqe),
                sg: &[],
            }])
            .map_err(|(_, e)| e)?;
            want += 1;
        }
        marker.wait(want, &[&core.send_cq, &core.recv_cq]);
        Ok(())
    }
}

/// The completion callback of `drain`'s marker requests.
#[pin_data]
struct DrainMarker {
    #[pin]
    state: SpinLockIrq<MarkerState>,
    /// Signalled on every change of `state`.
    #[pin]
    cv: CondVar,
}

/// What happened to the markers, under `DrainMarker::state`.
struct MarkerState {
    /// Markers whose completion was handled ([`CqeDone::done`]).
    done: u32,
    /// Markers whose completion was queued on a Direct CQ
    /// ([`CqeDone::queued`]), to be handled when `drain` polls.
    queued: u32,
}

impl DrainMarker {
    fn new() -> impl PinInit<Self> {
        pin_init!(DrainMarker {
            state <- crate::new_spinlock_irq!(
                MarkerState { done: 0, queued: 0 },
                "DrainMarker::state"
            ),
            cv <- new_condvar!("DrainMarker::cv"),
        })
    }

    /// Returns once `want` markers are handled. A CQ with a poll context
    /// hands them to `done` on its own; the Direct CQs among `cqs` are
    /// polled here (their owner may poll them too) whenever a marker was
    /// queued on one, and the drain sleeps in between.
    fn wait(&self, want: u32, cqs: &[&Arc<CqCore>]) {
        use crate::verbs::cq::BUDGET;
        loop {
            let queued = self.state.lock().queued;
            let mut full = false;
            for cq in cqs.iter().filter(|c| c.poll_ctx() == Some(PollCtx::Direct)) {
                full |= cq.process_direct(BUDGET).is_ok_and(|n| n >= BUDGET);
            }
            let mut st = self.state.lock();
            if st.done >= want {
                return;
            }
            // A full round may have left a marker in its CQ, and one queued
            // while the CQs were polled may have been missed: poll again.
            // Otherwise sleep until a marker is handled or queued; both
            // change `state` under its lock and signal `cv`, so the wake-up
            // cannot be lost.
            if full {
                drop(st);
                crate::kshim::time::cond_resched();
            } else if st.queued == queued {
                self.cv.wait(&mut st);
            }
        }
    }
}

impl CqeDone for DrainMarker {
    fn done(&self, _cq: &CqCore, _wc: &Wc) {
        self.state.lock().done += 1;
        self.cv.notify_all();
    }

    fn queued(&self, _cq: &CqCore) {
        self.state.lock().queued += 1;
        self.cv.notify_all();
    }
}
