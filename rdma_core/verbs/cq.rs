// SPDX-License-Identifier: GPL-2.0

//! Completion queues and the completion machinery (`ib_create_cq`,
//! `ib_alloc_cq`, `ib_poll_cq`, `ib_req_notify_cq`, `ib_peek_cq`,
//! `ib_resize_cq`, `rdma_set_cq_moderation`, `ib_process_cq_direct`).
//!
//! The ring of completions lives in the core: providers [`CqCore::push`]
//! completions, consumers [`CqCore::poll`] them. Who runs the consumer's code
//! is decided here, not by the provider:
//!
//! - a CQ made with [`Cq::create`] has a raw [`CompHandler`], called when
//!   the CQ is armed ([`CqCore::req_notify`]) and a matching completion
//!   arrives; the consumer polls and re-arms itself;
//! - a CQ made with [`Cq::alloc`] is polled by the core in its [`PollCtx`]
//!   (softirq through `irq_poll`, a high-priority or an unbound workqueue),
//!   `BUDGET` completions at a time, each handed to the
//!   [`CqeDone`](crate::verbs::wc::CqeDone) its work request named; the core
//!   re-arms with report-missed-events and polls again when it must.
//!   [`PollCtx::Direct`] CQs are polled by their owner with
//!   [`CqCore::process_direct`].
//!
//! At most one handler of a CQ runs at a time, whatever the provider does:
//! a `running` flag under the CQ's dispatch lock is claimed before a handler
//! starts; a notification that arrives meanwhile sets `pending`, and the
//! running handler goes round again. A provider that pushes from within the
//! call chain of a verb (its `post_send`, say) would call the consumer back
//! inside the consumer's own call: the core sees it (`crate::kshim::verb`), counts
//! and reports it, and defers the handler to a workqueue.
//!
//! Moderation ([`CqCore::modify`]): with a count, the handler is held back
//! until that many completions are waiting or the period (a timer) runs out.

pub mod pool;

use core::sync::atomic::{AtomicU64, Ordering};

use kernel::error::code::{EINVAL, ENODEV, ENOSPC};
use kernel::prelude::*;
use kernel::sync::{new_condvar, Arc, CondVar};
use kernel::workqueue::{self, impl_has_work, new_work, Work, WorkItem};

use crate::device::event::{Element, Event, EventKind};
use crate::device::{Device, ProviderDevice};
use crate::kshim::irq_poll::{IrqPoll, IrqPollItem};
use crate::kshim::sync::SpinLockIrq;
use crate::kshim::timer::{Timer, TimerItem};
use crate::spec::opcodes::{NotifyFlags, WcFlags, WcStatus};
use crate::spec::uverbs::cq::Wc as UverbsWc;
use crate::spec::uverbs::Wire;
use crate::verbs::object::{Handle, Life, Object};
use crate::verbs::restrack::{Resources, Table, UseCount};
use crate::verbs::uring::UserRing;
use crate::verbs::wc::Wc;

/// Completions the core handles per round before it yields the CPU.
pub const BUDGET: usize = 64;

/// Completions polled at once by the core (kept on the stack).
const BATCH: usize = 8;

/// Where the core runs the completion handling of a CQ (`enum
/// ib_poll_context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollCtx {
    /// No handler: the owner polls with [`CqCore::process_direct`].
    Direct,
    /// Softirq context (`irq_poll`): the callbacks must not sleep.
    Softirq,
    /// The high-priority system workqueue: the callbacks may sleep.
    Workqueue,
    /// The unbound system workqueue: the callbacks may sleep.
    UnboundWorkqueue,
}

/// A raw completion handler (`comp_handler` of `ib_create_cq`).
pub trait CompHandler: Send + Sync {
    /// The CQ has a completion of the kind it was armed for. Called in the
    /// provider's completion context (work or softirq), or from a
    /// workqueue; never two at once for one CQ. Must not sleep.
    fn completion(&self, cq: &CqCore);
}

/// Armed state of a CQ.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Armed {
    No,
    Solicited,
    Next,
}

struct Ring {
    wcs: KVec<Wc>,
    head: usize,
    count: usize,
    /// The number of entries the owner asked for.
    cqe: usize,
    armed: Armed,
    /// Moderation: how many completions to collect before notifying.
    mod_count: u16,
    /// Moderation period in microseconds.
    mod_period: u16,
    /// An armed notification is held back by moderation.
    held: bool,
    /// A user CQ: the ring completions go to instead of `wcs`.
    user: Option<UserCq>,
}

/// The completion ring of a user CQ ([`Cq::create_user`]): the kernel
/// produces `ib_uverbs_wc` entries, user space consumes them.
struct UserCq {
    ring: Arc<UserRing>,
    /// The kernel's producer index (never read back from the ring).
    prod: u32,
}

impl Ring {
    /// Completions waiting to be consumed: for a user CQ as far as its
    /// consumer index says.
    fn waiting(&self) -> usize {
        match &self.user {
            Some(u) => u.ring.count(u.prod, u.ring.consumer()) as usize,
            None => self.count,
        }
    }
}

struct DispatchState {
    running: bool,
    pending: bool,
    dead: bool,
}

/// The core's completion queue.
#[pin_data]
pub struct CqCore {
    dev: Arc<Device>,
    /// The CQ's number and release state.
    life: Life<()>,
    ctx: Option<PollCtx>,
    handler: Option<Arc<dyn CompHandler>>,
    #[pin]
    ring: SpinLockIrq<Ring>,
    #[pin]
    disp: SpinLockIrq<DispatchState>,
    #[pin]
    idle: CondVar,
    #[pin]
    work: Work<CqCore>,
    /// Runs the handler of a [`PollCtx::Softirq`] CQ.
    #[pin]
    iop: IrqPoll<CqCore>,
    /// Ends a moderation period ([`CqCore::modify`]).
    #[pin]
    timer: Timer<CqCore>,
    /// QPs and SRQs using the CQ.
    uses: UseCount,
    inline_signals: AtomicU64,
    overflows: AtomicU64,
}

impl_has_work! {
    impl HasWork<Self> for CqCore { self.work }
}

impl WorkItem for CqCore {
    type Pointer = Arc<CqCore>;

    fn run(this: Arc<CqCore>) {
        if this.ctx.is_some() {
            this.run_pool_work();
        } else {
            this.run_raw();
        }
    }
}

/// The provider's handle on a CQ of its device ([`ProviderCq::of`]): adds
/// completions. Providers of QPs complete through the QP instead
/// ([`ProviderQp::sq_complete`](crate::verbs::qp::ProviderQp::sq_complete)),
/// which keeps the queues' order.
#[derive(Clone)]
pub struct ProviderCq(Arc<CqCore>);

impl ProviderCq {
    /// The provider's handle on `cq`, when it is a CQ of its device `dev`.
    /// Any context.
    pub fn of(dev: &ProviderDevice, cq: &Arc<CqCore>) -> Option<ProviderCq> {
        Arc::ptr_eq(cq.device(), dev.arc()).then(|| ProviderCq(cq.clone()))
    }

    /// Adds a completion. `solicited` is the solicited event bit of the
    /// message that completed (receives). Any context.
    ///
    /// A full CQ drops the completion, raises a `CqErr` event and returns
    /// `ENOSPC`: the provider must then move the QP to the error state.
    pub fn push(&self, wc: Wc, solicited: bool) -> Result {
        self.0.push(wc, solicited)
    }
}

impl core::ops::Deref for ProviderCq {
    type Target = Arc<CqCore>;

    fn deref(&self) -> &Arc<CqCore> {
        &self.0
    }
}

impl IrqPollItem for CqCore {
    fn poll(this: &Arc<Self>, budget: usize) -> usize {
        if this.disp.lock().dead {
            return 0;
        }
        this.poll_dispatch(budget)
    }

    fn completed(this: &Arc<Self>) {
        let again = !this.disp.lock().dead && this.rearm();
        if this.round_done(again) {
            this.iop.sched(this);
        }
    }
}

/// The moderation timer: notify for what was held back.
impl TimerItem for CqCore {
    fn timer(&self) -> &Timer<Self> {
        &self.timer
    }

    fn fired(this: Arc<Self>) {
        let fire = {
            let mut r = this.ring.lock();
            let fire = r.held && r.waiting() > 0;
            if fire {
                r.held = false;
                r.armed = Armed::No;
            }
            fire
        };
        if fire {
            this.trigger(false);
        }
    }
}

impl CqCore {
    /// The CQ's number on its device.
    pub fn num(&self) -> u32 {
        self.life.num()
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// How many QPs and SRQs use the CQ (`rdma res show cq`'s `users`).
    pub fn users(&self) -> u32 {
        self.uses.users()
    }

    /// The poll context, `None` for a CQ with a raw handler.
    pub fn poll_ctx(&self) -> Option<PollCtx> {
        self.ctx
    }

    /// The number of entries the CQ holds.
    pub fn capacity(&self) -> usize {
        self.ring.lock().cqe
    }

    /// Times a provider signalled from within a verb's call chain.
    pub fn inline_signals(&self) -> u64 {
        self.inline_signals.load(Ordering::Relaxed)
    }

    /// Times a completion found the CQ full.
    pub fn overflows(&self) -> u64 {
        self.overflows.load(Ordering::Relaxed)
    }

    /// Moves up to `out.len()` completions into `out` (`ib_poll_cq`) and
    /// returns how many. Any context; never sleeps.
    pub fn poll(&self, out: &mut [Wc]) -> usize {
        let _verb = crate::kshim::verb::Verb::enter();
        let mut r = self.ring.lock();
        let n = core::cmp::min(out.len(), r.count);
        let cap = r.wcs.len();
        for slot in out.iter_mut().take(n) {
            let head = r.head;
            *slot = core::mem::take(&mut r.wcs[head]);
            r.head = (head + 1) % cap;
        }
        r.count -= n;
        n
    }

    /// How many completions are waiting, up to `n` (`ib_peek_cq`). Any
    /// context.
    pub fn peek(&self, n: usize) -> usize {
        core::cmp::min(n, self.ring.lock().count)
    }

    /// Arms the CQ (`ib_req_notify_cq`): `NEXT_COMP` for any completion,
    /// `SOLICITED` for a solicited or failed one (exactly one of the two).
    /// With `REPORT_MISSED_EVENTS`, returns true when completions are
    /// already waiting (the caller must poll again). Any context.
    pub fn req_notify(&self, flags: NotifyFlags) -> Result<bool> {
        let _verb = crate::kshim::verb::Verb::enter();
        let which = flags.0 & (NotifyFlags::SOLICITED.0 | NotifyFlags::NEXT_COMP.0);
        let armed = if flags.has_unknown() {
            return Err(EINVAL);
        } else if which == NotifyFlags::NEXT_COMP.0 {
            Armed::Next
        } else if which == NotifyFlags::SOLICITED.0 {
            Armed::Solicited
        } else {
            return Err(EINVAL);
        };
        if self.ctx == Some(PollCtx::Direct) {
            return Err(EINVAL);
        }
        let mut r = self.ring.lock();
        // A solicited arm does not weaken an armed "next".
        if !(r.armed == Armed::Next && armed == Armed::Solicited) {
            r.armed = armed;
        }
        Ok(flags.contains(NotifyFlags::REPORT_MISSED_EVENTS) && r.waiting() > 0)
    }

    /// Adds a completion (for providers). `solicited` is the solicited
    /// event bit of the message that completed (receives). Any context.
    ///
    /// A full CQ drops the completion, raises a `CqErr` event and returns
    /// `ENOSPC`: the provider must then move the QP to the error state.
    pub(crate) fn push(self: &Arc<Self>, wc: Wc, solicited: bool) -> Result {
        self.push_inner(wc, solicited, false)
    }

    /// A completion the core itself generates (flushes), from inside a verb:
    /// the handler is deferred, and that is not a provider's fault.
    pub(crate) fn push_from_core(self: &Arc<Self>, wc: Wc) -> Result {
        self.push_inner(wc, false, true)
    }

    fn push_inner(self: &Arc<Self>, wc: Wc, solicited: bool, from_core: bool) -> Result {
        let failed = wc.status != WcStatus::Success;
        let (notify, arm_timer) = {
            let mut r = self.ring.lock();
            if let Some(u) = r.user.as_mut() {
                let cons = u.ring.consumer();
                if u.ring.is_full(u.prod, cons) {
                    drop(r);
                    self.overflow();
                    return Err(ENOSPC);
                }
                let mut slot = [0u8; USER_WC_SIZE];
                user_wc(&wc).write_to(&mut slot);
                u.ring.write_slot(u.prod, &slot)?;
                u.prod = u.prod.wrapping_add(1);
                u.ring.publish_producer(u.prod);
            } else {
                if r.count >= r.cqe {
                    drop(r);
                    self.overflow();
                    return Err(ENOSPC);
                }
                let cap = r.wcs.len();
                let tail = (r.head + r.count) % cap;
                r.wcs[tail] = wc;
                r.count += 1;
                if self.ctx == Some(PollCtx::Direct) {
                    // Nobody is notified for a Direct CQ: tell the request
                    // that its completion waits to be polled (a drain
                    // sleeps on it).
                    if let Some(cqe) = &r.wcs[tail].cqe {
                        cqe.queued(self);
                    }
                }
            }
            let hit = match r.armed {
                Armed::Next => true,
                Armed::Solicited => solicited || failed,
                Armed::No => false,
            };
            if !hit {
                (false, false)
            } else if r.mod_count > 1 && r.waiting() < usize::from(r.mod_count) {
                // Held back by moderation until the count or the period.
                let first = !r.held;
                r.held = true;
                (false, first && r.mod_period > 0)
            } else {
                r.armed = Armed::No;
                r.held = false;
                (true, false)
            }
        };
        if arm_timer {
            let period = u32::from(self.ring.lock().mod_period);
            Timer::arm_us(self, period);
        }
        if notify {
            let in_verb = crate::kshim::verb::in_verb();
            if in_verb && !from_core {
                self.inline_signals.fetch_add(1, Ordering::Relaxed);
                crate::kshim::verb::report_inline(self.dev.name(), self.life.num());
            }
            self.trigger(in_verb);
        }
        Ok(())
    }

    /// A completion found the CQ full: counted, and a `CqErr` event.
    fn overflow(&self) {
        self.overflows.fetch_add(1, Ordering::Relaxed);
        self.dev.dispatch_event(Event {
            kind: EventKind::CqErr,
            element: Element::Cq(self.life.num()),
        });
    }

    /// The ring of a user CQ, for mapping into user space.
    pub fn user_ring(&self) -> Option<Arc<UserRing>> {
        self.ring.lock().user.as_ref().map(|u| u.ring.clone())
    }

    /// Starts the handler unless one runs; `defer` forces a raw handler to
    /// a workqueue.
    fn trigger(self: &Arc<Self>, defer: bool) {
        {
            let mut d = self.disp.lock();
            if d.dead {
                return;
            }
            if d.running {
                d.pending = true;
                return;
            }
            d.running = true;
            d.pending = false;
        }
        match self.ctx {
            Some(PollCtx::Softirq) => {
                self.iop.sched(self);
            }
            Some(PollCtx::Workqueue) => self.queue(workqueue::system_highpri()),
            Some(PollCtx::UnboundWorkqueue) => self.queue(workqueue::system_unbound()),
            Some(PollCtx::Direct) => self.set_idle(),
            None if self.handler.is_none() => self.set_idle(),
            None if defer => self.queue(workqueue::system_highpri()),
            None => self.run_raw(),
        }
    }

    fn queue(self: &Arc<Self>, wq: &workqueue::Queue) {
        if wq.enqueue(self.clone()).is_err() {
            // Already queued: that run will see `pending`.
            self.disp.lock().pending = true;
        }
    }

    fn set_idle(&self) {
        let mut d = self.disp.lock();
        d.running = false;
        d.pending = false;
        self.idle.notify_all();
    }

    /// Ends a round: true if the handler must run again (and stays
    /// claimed), false if the CQ is idle now.
    fn round_done(&self, again: bool) -> bool {
        let mut d = self.disp.lock();
        if !d.dead && (again || d.pending) {
            d.pending = false;
            return true;
        }
        d.running = false;
        d.pending = false;
        self.idle.notify_all();
        false
    }

    fn run_raw(&self) {
        let Some(handler) = &self.handler else {
            self.set_idle();
            return;
        };
        loop {
            if self.disp.lock().dead {
                self.set_idle();
                return;
            }
            handler.completion(self);
            if !self.round_done(false) {
                return;
            }
        }
    }

    /// Polls up to `budget` completions and hands each to its work
    /// request's `done`; returns how many.
    fn poll_dispatch(&self, budget: usize) -> usize {
        let mut batch: [Wc; BATCH] = Default::default();
        let mut total = 0;
        while total < budget {
            let want = core::cmp::min(BATCH, budget - total);
            let n = self.poll(&mut batch[..want]);
            for wc in batch.iter_mut().take(n) {
                let wc = core::mem::take(wc);
                if let Some(cqe) = &wc.cqe {
                    cqe.done(self, &wc);
                }
            }
            total += n;
            if n < want {
                break;
            }
        }
        total
    }

    /// Re-arms for the next completion; true if some are already waiting.
    fn rearm(&self) -> bool {
        self.req_notify(NotifyFlags::NEXT_COMP | NotifyFlags::REPORT_MISSED_EVENTS)
            .unwrap_or(false)
    }

    fn run_pool_work(self: Arc<Self>) {
        if self.disp.lock().dead {
            self.set_idle();
            return;
        }
        let n = self.poll_dispatch(BUDGET);
        let again = n >= BUDGET || self.rearm();
        if self.round_done(again) {
            let wq = if self.ctx == Some(PollCtx::UnboundWorkqueue) {
                workqueue::system_unbound()
            } else {
                workqueue::system_highpri()
            };
            // Not queued (this run dequeued it), so this succeeds; if it
            // did not, the queued run does the work.
            let _ = wq.enqueue(self);
        }
    }

    /// Polls and dispatches up to `budget` completions in the caller's
    /// context (`ib_process_cq_direct`); only for [`PollCtx::Direct`] CQs
    /// (`EINVAL` otherwise). Returns how many were handled.
    pub fn process_direct(&self, budget: usize) -> Result<usize> {
        if self.ctx != Some(PollCtx::Direct) {
            return Err(EINVAL);
        }
        Ok(self.poll_dispatch(budget))
    }

    /// Changes the number of entries (`ib_resize_cq`): `EINVAL` below the
    /// completions waiting now, for 0 or above the device's limit. May
    /// sleep.
    pub fn resize(&self, cqe: u32) -> Result {
        crate::kshim::verb::might_sleep();
        if self.life.is_released() {
            return Err(ENODEV);
        }
        let max = self.dev.attr().max_cqe;
        if cqe == 0 || cqe > max {
            return Err(EINVAL);
        }
        let mut fresh = new_ring_storage(cqe as usize)?;
        let old = {
            let mut r = self.ring.lock();
            if r.user.is_some() {
                // A user ring is resized with a new mapping, by its file
                // (`new_user_ring`, `resize_user`).
                return Err(crate::kshim::errno::eopnotsupp());
            }
            if (cqe as usize) < r.count {
                return Err(EINVAL);
            }
            let cap = r.wcs.len();
            for i in 0..r.count {
                let from = (r.head + i) % cap;
                fresh[i] = core::mem::take(&mut r.wcs[from]);
            }
            r.head = 0;
            r.cqe = cqe as usize;
            core::mem::replace(&mut r.wcs, fresh)
        };
        drop(old);
        Ok(())
    }

    /// Makes the ring for resizing a user CQ to `cqe` entries
    /// ([`CqCore::resize_user`]): `EINVAL` for 0, above the device's
    /// limit or for a CQ that is not a user CQ. May sleep.
    pub fn new_user_ring(&self, cqe: u32) -> Result<UserResize> {
        crate::kshim::verb::might_sleep();
        if self.life.is_released() {
            return Err(ENODEV);
        }
        if cqe == 0 || cqe > self.dev.attr().max_cqe || self.user_ring().is_none() {
            return Err(EINVAL);
        }
        let ring = UserRing::new(cqe, USER_WC_SIZE)?;
        Ok(UserResize { ring, cqe })
    }

    /// Swaps the ring of `resize` in for a user CQ's ring (`ib_resize_cq`
    /// of a user CQ), under the CQ's ring lock: the completions user space
    /// has not consumed yet (as far as its consumer index, read once,
    /// says) move into it in order, and completions pushed from then on go
    /// to it. When more are waiting than the entries asked for: `EINVAL`,
    /// and the old ring stays as it was. Returns the old ring, which user
    /// space unmaps. Any context; never sleeps.
    pub fn resize_user(&self, resize: UserResize) -> Result<Arc<UserRing>> {
        if self.life.is_released() {
            return Err(ENODEV);
        }
        let mut r = self.ring.lock();
        let u = r.user.as_mut().ok_or(EINVAL)?;
        let cons = u.ring.consumer();
        let prod = u.ring.carry_into(cons, u.prod, &resize.ring, resize.cqe)?;
        u.prod = prod;
        let old = core::mem::replace(&mut u.ring, resize.ring);
        r.cqe = resize.cqe as usize;
        Ok(old)
    }

    /// Sets interrupt moderation (`rdma_set_cq_moderation`): notify once
    /// `count` completions are waiting or `period_us` microseconds after the
    /// first one, whichever comes first. `count` 0 or 1 turns it off.
    pub fn modify(&self, count: u16, period_us: u16) -> Result {
        if self.life.is_released() {
            return Err(ENODEV);
        }
        let mut r = self.ring.lock();
        r.mod_count = count;
        r.mod_period = period_us;
        Ok(())
    }

    /// Stops handler dispatch for good and waits for a running handler.
    /// Process context.
    fn stop_dispatch(&self) {
        crate::kshim::verb::might_sleep();
        let mut d = self.disp.lock();
        d.dead = true;
        while d.running {
            self.idle.wait(&mut d);
        }
        drop(d);
        // `dead` is set, so nothing arms or schedules them again; both
        // wait for a running callback.
        self.timer.shutdown();
        if self.ctx == Some(PollCtx::Softirq) {
            self.iop.disable();
        }
    }
}

impl Object for CqCore {
    type Deps = ();

    fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    fn table<'a>(&self, res: &'a Resources) -> &'a Table<Self> {
        &res.cq
    }

    fn life(&self) -> &Life<()> {
        &self.life
    }

    fn on_release(&self) {
        self.stop_dispatch();
    }

    fn uses(&self) -> Option<&UseCount> {
        Some(&self.uses)
    }
}

fn new_ring_storage(cqe: usize) -> Result<KVec<Wc>> {
    let mut v = KVec::with_capacity(cqe, GFP_KERNEL)?;
    for _ in 0..cqe {
        v.push(Wc::default(), GFP_KERNEL)?;
    }
    Ok(v)
}

/// A completion queue, owned by a ULP.
pub type Cq = Handle<CqCore>;

impl Handle<CqCore> {
    fn new_core(
        dev: &Arc<Device>,
        cqe: u32,
        ctx: Option<PollCtx>,
        handler: Option<Arc<dyn CompHandler>>,
        user: bool,
    ) -> Result<Cq> {
        crate::kshim::verb::might_sleep();
        let _usage = dev.try_get().ok_or(ENODEV)?;
        if cqe == 0 || cqe > dev.attr().max_cqe {
            return Err(EINVAL);
        }
        let (wcs, user) = if user {
            let ring = UserRing::new(cqe, USER_WC_SIZE)?;
            (KVec::new(), Some(UserCq { ring, prod: 0 }))
        } else {
            (new_ring_storage(cqe as usize)?, None)
        };
        let num = dev.res.cq.reserve()?;
        let number = num.num();
        let ring = Ring {
            wcs,
            head: 0,
            count: 0,
            cqe: cqe as usize,
            armed: Armed::No,
            mod_count: 0,
            mod_period: 0,
            held: false,
            user,
        };
        let core = Arc::pin_init(
            pin_init!(CqCore {
                dev: dev.clone(),
                life: Life::new(number, ()),
                ctx,
                handler,
                ring <- crate::new_spinlock_irq!(ring, "CqCore::ring"),
                disp <- crate::new_spinlock_irq!(
                    DispatchState { running: false, pending: false, dead: false },
                    "CqCore::disp"
                ),
                idle <- new_condvar!("CqCore::idle"),
                work <- new_work!("CqCore::work"),
                iop <- IrqPoll::new(BUDGET as u32),
                timer <- Timer::new(),
                uses: UseCount::new(),
                inline_signals: AtomicU64::new(0),
                overflows: AtomicU64::new(0),
            }),
            GFP_KERNEL,
        )?;
        num.publish(core.clone());
        if ctx.is_some() && ctx != Some(PollCtx::Direct) {
            core.rearm();
        }
        Ok(Handle::new(core))
    }

    /// Creates a CQ of `cqe` entries with a raw completion handler
    /// (`ib_create_cq`). May sleep.
    pub fn create(
        dev: &Arc<Device>,
        cqe: u32,
        handler: Option<Arc<dyn CompHandler>>,
    ) -> Result<Cq> {
        Cq::new_core(dev, cqe, None, handler, false)
    }

    /// Creates a CQ the core polls in `ctx` (`ib_alloc_cq`): completions go
    /// to their work requests' [`CqeDone`](crate::verbs::wc::CqeDone). May sleep.
    pub fn alloc(dev: &Arc<Device>, cqe: u32, ctx: PollCtx) -> Result<Cq> {
        Cq::new_core(dev, cqe, Some(ctx), None, false)
    }

    /// Creates a CQ whose completions go to a ring user space maps
    /// ([`CqCore::user_ring`]) as `ib_uverbs_wc` entries, with a raw
    /// handler for its notifications (the uverbs completion channel).
    /// The core does not poll it ([`CqCore::poll`] finds nothing); it
    /// is resized with a new ring ([`CqCore::new_user_ring`],
    /// [`CqCore::resize_user`]), not with [`CqCore::resize`]. May sleep.
    pub fn create_user(
        dev: &Arc<Device>,
        cqe: u32,
        handler: Option<Arc<dyn CompHandler>>,
    ) -> Result<Cq> {
        Cq::new_core(dev, cqe, None, handler, true)
    }
}

/// A new ring for a user CQ's resize, made (it may sleep) before the
/// CQ's lock is taken: offered for mapping by its owner, then swapped in
/// by [`CqCore::resize_user`].
pub struct UserResize {
    ring: Arc<UserRing>,
    /// The entries asked for (at most the ring's capacity).
    cqe: u32,
}

impl UserResize {
    /// The new ring.
    pub fn ring(&self) -> &Arc<UserRing> {
        &self.ring
    }

    /// The entries the new ring holds: what the resize answers.
    pub fn capacity(&self) -> u32 {
        self.ring.capacity()
    }
}

/// The size of an entry of a user CQ's ring (`struct ib_uverbs_wc`).
const USER_WC_SIZE: usize = <UverbsWc as Wire>::SIZE;

/// A completion as user space reads it.
fn user_wc(wc: &Wc) -> UverbsWc {
    let ex = if wc.wc_flags.contains(WcFlags::WITH_INVALIDATE) {
        wc.invalidate_rkey
    } else {
        // Immediate data travels in network byte order.
        u32::from_le_bytes(wc.imm_data.to_be_bytes())
    };
    UverbsWc {
        wr_id: wc.wr_id,
        status: wc.status as u32,
        opcode: wc.opcode.as_raw(),
        vendor_err: wc.vendor_err,
        byte_len: wc.byte_len,
        ex,
        qp_num: wc.qp_num,
        src_qp: wc.src_qp,
        // What the C rxe reports to user space: no network header type.
        wc_flags: wc.wc_flags.0
            & (WcFlags::GRH.0 | WcFlags::WITH_IMM.0 | WcFlags::WITH_INVALIDATE.0),
        pkey_index: wc.pkey_index,
        slid: 0,
        sl: wc.sl,
        dlid_path_bits: 0,
        port_num: wc.port_num as u8,
        reserved: 0,
    }
}
