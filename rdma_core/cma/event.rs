// SPDX-License-Identifier: GPL-2.0

//! Events: what the ULP's handler receives ([`CmEvent`], [`EventKind`],
//! [`CmHandler`], [`Disposition`]) and their delivery, one at a time and in
//! order, from each id's work item; and the waits for that delivery to be
//! over (by `destroy` and by device removal), on the id's `idle` condition.

use core::sync::atomic::Ordering;

use kernel::prelude::*;
use kernel::sync::{Arc, CondVarTimeoutResult};
use kernel::time::msecs_to_jiffies;
use kernel::workqueue::{self, WorkItem};

use super::conn::ConnParam;
use super::id::{CmId, CmIdCore};
use super::mcast::UdParam;
use crate::kshim::vec::remove;

/// What happened to an id (`enum rdma_cm_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `resolve_addr` done.
    AddrResolved,
    /// `resolve_addr` failed (`status`).
    AddrError,
    /// `resolve_route` done.
    RouteResolved,
    /// `resolve_route` failed.
    RouteError,
    /// A connection request on a listener (`new_id`).
    ConnectRequest,
    /// No answer after the CM's retries.
    Unreachable,
    /// The peer rejected (`status` is the REJ's reason).
    Rejected,
    /// Active, for a QP of user space's: the REP came and its RTU waits
    /// for [`CmIdCore::establish`] (`param.qp_num` is the peer's QPN).
    ConnectResponse,
    /// Connected.
    Established,
    /// Disconnected.
    Disconnected,
    /// The id's device is going away.
    DeviceRemoval,
    /// Timewait is over: the QP may be reused.
    TimewaitExit,
    /// A multicast join is done ([`CmEvent::ud`] addresses the group,
    /// [`CmEvent::mc`] is the join's context).
    MulticastJoin,
    /// A multicast join failed (`status`; [`CmEvent::mc`]).
    MulticastError,
}

/// An event (`struct rdma_cm_event`).
pub struct CmEvent {
    /// What happened.
    pub kind: EventKind,
    /// An errno (negative) or, for `Rejected`, the REJ's reason.
    pub status: i32,
    /// The peer's private data (REQ: its 56 bytes after the rdma_cm
    /// header; REP 196; REJ 148).
    pub private_data: KVec<u8>,
    /// For `ConnectRequest`: the new id, to keep (and accept or reject)
    /// or to drop (which rejects it).
    pub new_id: Option<CmId>,
    /// For `ConnectRequest`: the peer's offer (responder resources and
    /// initiator depth as the REQ has them).
    pub param: ConnParam,
    /// For `MulticastJoin` (and the events of UD ids that carry them):
    /// where to send and with which Q_Key.
    pub ud: Option<UdParam>,
    /// For `MulticastJoin` and `MulticastError`: the context the join
    /// was given ([`CmIdCore::join_multicast`]).
    pub mc: u64,
}

impl CmEvent {
    pub(super) fn new(kind: EventKind, status: i32) -> CmEvent {
        CmEvent {
            kind,
            status,
            private_data: KVec::new(),
            new_id: None,
            param: ConnParam::default(),
            ud: None,
            mc: 0,
        }
    }
}

/// What the handler wants done with the id after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Nothing.
    Keep,
    /// Destroy it (the C handler's non-zero return).
    Destroy,
}

/// The owner of an id.
pub trait CmHandler: Send + Sync {
    /// An event of `id`; see the module doc for what may be called here.
    fn event(&self, id: &Arc<CmIdCore>, ev: CmEvent) -> Disposition;
}

/// The events of an id not delivered yet, and whether its work item runs.
pub(super) struct Queue {
    pub(super) events: KVec<CmEvent>,
    /// The work item is queued or runs; cleared (and `CmIdCore::idle`
    /// notified) when it has delivered every event.
    pub(super) running: bool,
    /// The task running the handler, while it runs.
    pub(super) task: usize,
    /// A listener's: the task handing one of its connection requests to
    /// the handler, on the new id's work item (0: none). One at a time,
    /// as rdma_cm holds the listening id's handler mutex meanwhile; no
    /// lock is held across the handler.
    pub(super) handing: usize,
}

/// The calling task, as a number.
pub(super) fn current_task() -> usize {
    let t = kernel::current!();
    core::ptr::from_ref::<kernel::task::Task>(t) as usize
}

impl WorkItem for CmIdCore {
    type Pointer = Arc<CmIdCore>;

    fn run(this: Arc<CmIdCore>) {
        let me = current_task();
        loop {
            let ev = {
                let mut q = this.queue.lock();
                match remove(&mut q.events, 0) {
                    Some(ev) => {
                        q.task = me;
                        ev
                    }
                    None => {
                        q.running = false;
                        q.task = 0;
                        this.idle.notify_all();
                        return;
                    }
                }
            };
            if this.destroyed.load(Ordering::Acquire) {
                continue;
            }
            let request = ev.kind == EventKind::ConnectRequest;
            let parent = if request {
                this.st.lock().parent.clone()
            } else {
                None
            };
            let disposition = match parent {
                // A request is handed over as its listener's one handover:
                // a listener destroyed before is not called (the request
                // is rejected: its new id goes with the event), and one
                // destroyed meanwhile waits for the handler to return.
                Some(p) => {
                    if !p.handover_begin(me) {
                        drop(ev);
                        continue;
                    }
                    let d = this.handler.event(&this, ev);
                    p.handover_end();
                    d
                }
                None => this.handler.event(&this, ev),
            };
            if disposition == Disposition::Destroy {
                this.destroy();
            } else if request {
                this.mra_if_unanswered();
            }
        }
    }
}

impl CmIdCore {
    /// Queues an event for the handler.
    pub(super) fn post(self: &Arc<Self>, ev: CmEvent) {
        if self.destroyed.load(Ordering::Acquire) {
            return;
        }
        let start = {
            let mut q = self.queue.lock();
            if q.events.push(ev, GFP_ATOMIC).is_err() {
                return;
            }
            !core::mem::replace(&mut q.running, true)
        };
        if start {
            let _ = workqueue::system_unbound().enqueue(self.clone());
        }
    }

    /// A listener's: begins handing a connection request to the handler
    /// on task `me`, once no other is; `false` (nothing begun) if the
    /// listener was destroyed.
    fn handover_begin(&self, me: usize) -> bool {
        let mut q = self.queue.lock();
        loop {
            if self.destroyed.load(Ordering::Acquire) {
                return false;
            }
            if q.handing == 0 {
                q.handing = me;
                return true;
            }
            self.idle.wait(&mut q);
        }
    }

    /// The handover `handover_begin` began has returned.
    fn handover_end(&self) {
        let mut q = self.queue.lock();
        q.handing = 0;
        drop(q);
        self.idle.notify_all();
    }

    /// Waits until no connection request of this listener is being
    /// handed over on another task than the caller's (`destroyed` is set
    /// already: none begins after). Process context, with no lock of the
    /// id held.
    pub(super) fn wait_handover_elsewhere(&self) {
        let me = current_task();
        let mut q = self.queue.lock();
        while q.handing != 0 && q.handing != me {
            self.idle.wait(&mut q);
        }
    }

    /// Waits until no handler of this id runs on another task than the
    /// caller's: the handler itself does not wait for itself. Process
    /// context, with no lock of the id held.
    pub(super) fn wait_handler_elsewhere(&self) {
        let me = current_task();
        let mut q = self.queue.lock();
        while q.running && q.task != 0 && q.task != me {
            self.idle.wait(&mut q);
        }
    }

    /// Waits at most `ms` milliseconds until the handler has seen every
    /// queued event (less if a signal is pending: the kernel crate's one
    /// timed wait is interruptible). Process context.
    pub(super) fn wait_idle(&self, ms: u32) {
        let mut left = msecs_to_jiffies(ms);
        let mut q = self.queue.lock();
        while q.running {
            match self.idle.wait_interruptible_timeout(&mut q, left) {
                CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
                CondVarTimeoutResult::Timeout | CondVarTimeoutResult::Signal { .. } => return,
            }
        }
    }
}
