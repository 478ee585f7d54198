// SPDX-License-Identifier: GPL-2.0

//! One port's QP1: its verbs objects, receive buffers and send slots, the
//! dispatch of what it receives, and the internal client that opens and
//! closes it with the device.
//!
//! A [`MadPort`] is made by [`MadClient::add`] for each port of a device
//! that takes MADs and closed by [`MadClient::remove`] (QP first, so no
//! completion is delivered after it; then the timer and the work; the
//! agents have been dropped by their owners, whose clients were removed
//! before this one).
//!
//! Buffers: one [`Buffer`] holds [`RECV_SLOTS`] receive slots of
//! 40 + 256 bytes (the network header the device puts first, then the
//! MAD) followed by [`SEND_SLOTS`] send slots of 256 bytes. A receive slot
//! is copied out and posted again before its MAD is dispatched. A send
//! slot holds its MAD and its address handle until the send completes.
//!
//! # QP1 brought back
//!
//! QP1 must stay in RTS: without it no MAD goes or comes on the port, and
//! no connection can be made there. If it ever leaves RTS (a fatal error
//! of the provider, a receive that failed, anybody's `modify_qp`), its
//! work requests complete in error (the receives flushed): the first
//! completion in error that finds QP1 out of RTS queues the port's
//! recovery work ([`MadPort::recover`], process context), which drains
//! QP1 (every completion before its marker handled, so no receive slot is
//! still owned by the queue or by a completion in flight), moves it to
//! RESET, INIT, RTR and RTS again and posts every receive buffer again.
//! A receive the provider took before QP1 left RTS may still complete
//! after the drain: receives carry a generation in their work request ID,
//! which the recovery changes once QP1 is in RESET, and a completion of
//! an older generation is ignored, so no slot is ever posted twice.
//! The agents stay registered; what they sent meanwhile completed with an
//! error (a request waiting for its response is sent again at its
//! deadline). Each recovery is counted (`qp1_recoveries`) and logged,
//! rate-limited.
//!
//! The counters are in sysfs, one file each, under
//! `/sys/class/rdma_rs/<dev>/ports/<N>/mad/`.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use core::fmt::Write;

use kernel::c_str;
use kernel::error::code::{EINVAL, ENOMEM, ENXIO};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue::{self, impl_has_work, new_work, Work, WorkItem};

use crate::device::client::{Client, ClientRegistration};
use crate::device::sysfs::{PortGroup, PortGroupShow, PortGroupsRegistration};
use crate::device::Device;
use crate::kshim::global::Global;
use crate::kshim::mem::Buffer;
use crate::kshim::sync::{SpinLockIrq, TakeOnce};
use crate::kshim::sysfs::Page;
use crate::kshim::time::now_ms;
use crate::kshim::timer::{Timer, TimerItem};
use crate::mad::agent::{AgentCore, MadAddr, RecvMad, SendStatus};
use crate::spec::mad::{
    MadHeader, MAD_SIZE, METHOD_GET, METHOD_GET_RESP, METHOD_RESP, METHOD_SET, QP1_QKEY,
    STATUS_UNSUPPORTED_METHOD_ATTRIB,
};
use crate::spec::opcodes::{Access, WcOpcode, WcStatus};
use crate::spec::qp_state::{required_attrs, AttrMask, QpState, QpType};
use crate::verbs::ah::{Ah, AhAttr};
use crate::verbs::cq::{Cq, CqCore, PollCtx};
use crate::verbs::mr::Mr;
use crate::verbs::pd::{Pd, PdCore};
use crate::verbs::qp::{Qp, QpAttr, QpCap, QpCore, QpInitAttr};
use crate::verbs::wc::{CqeDone, Wc};
use crate::verbs::wr::{RecvWr, SendOp, SendWr, UdDest};

/// Receive buffers posted on QP1 (the C layer's `mad_recvq_size`).
pub const RECV_SLOTS: usize = 512;
/// Sends in flight on QP1 at most (the C layer's `mad_sendq_size`).
pub const SEND_SLOTS: usize = 128;
/// The network header in front of a received MAD.
pub const GRH_LEN: usize = 40;
/// One receive slot.
const RECV_LEN: usize = GRH_LEN + MAD_SIZE;
/// Work request IDs of sends have this bit; receives are their slot, and
/// the receive generation at [`GEN_SHIFT`].
const SEND_BIT: u64 = 1 << 32;
/// Where a receive's work request ID has the generation it was posted in.
const GEN_SHIFT: u32 = 16;

/// What a port's MAD layer counted (`/sys/class/rdma_rs/<dev>/ports/<N>/
/// hw_counters` has the provider's; these are the core's).
#[derive(Default)]
pub struct MadCounters {
    /// MADs sent (retries included) and completed without error.
    pub tx: AtomicU64,
    /// Sends that completed with an error.
    pub tx_errors: AtomicU64,
    /// Sends sent again after a timeout.
    pub retries: AtomicU64,
    /// Requests that got no response after their last retry.
    pub timeouts: AtomicU64,
    /// MADs received and handed to an agent.
    pub rx: AtomicU64,
    /// MADs received that no agent took (no agent of the class, or a
    /// response nobody waits for).
    pub rx_unmatched: AtomicU64,
    /// Datagrams that are no MAD (short, bad base version, no GRH).
    pub rx_bad: AtomicU64,
    /// Times QP1 was found out of RTS and brought back.
    pub qp1_recoveries: AtomicU64,
}

/// The number of [`MadCounters`].
pub const COUNTERS: usize = 8;

/// The names of the counters, in [`MadCounters::snapshot`] order: the
/// files of `ports/<N>/mad/` in sysfs.
pub const COUNTER_NAMES: [&CStr; COUNTERS] = [
    c_str!("tx"),
    c_str!("tx_errors"),
    c_str!("retries"),
    c_str!("timeouts"),
    c_str!("rx"),
    c_str!("rx_unmatched"),
    c_str!("rx_bad"),
    c_str!("qp1_recoveries"),
];

impl MadCounters {
    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// `(name, value)` of every counter, for logs and tests.
    pub fn snapshot(&self) -> [(&'static str, u64); COUNTERS] {
        let v = |c: &AtomicU64| c.load(Ordering::Relaxed);
        [
            ("tx", v(&self.tx)),
            ("tx_errors", v(&self.tx_errors)),
            ("retries", v(&self.retries)),
            ("timeouts", v(&self.timeouts)),
            ("rx", v(&self.rx)),
            ("rx_unmatched", v(&self.rx_unmatched)),
            ("rx_bad", v(&self.rx_bad)),
            ("qp1_recoveries", v(&self.qp1_recoveries)),
        ]
    }
}

/// The verbs objects of a port's QP1, in destruction order.
struct Verbs {
    _qp: Qp,
    _mr: Mr,
    _cq: Cq,
    _pd: Pd,
}

/// A send in flight: what it keeps until its completion.
struct SendSlot {
    /// The address handle of the destination.
    _ah: Ah,
    /// The agent to tell, and what, when the send completes: `None` for a
    /// request that waits for its response (its end comes from there).
    notify: Option<(u32, u64)>,
}

/// A port's MAD layer.
#[pin_data]
pub struct MadPort {
    dev: Arc<Device>,
    port: u32,
    qp: Arc<QpCore>,
    pd: Arc<PdCore>,
    lkey: u32,
    buf: Arc<Buffer>,
    /// Dropped by [`MadPort::close`].
    verbs: TakeOnce<Verbs>,
    /// This port as the completion callback of its work requests; taken
    /// at close, which ends the cycle port -> QP -> work request -> port.
    #[pin]
    me: SpinLockIrq<Option<Arc<MadPort>>>,
    /// Registered agents.
    #[pin]
    pub(crate) agents: Mutex<KVec<Arc<AgentCore>>>,
    /// Send slots.
    #[pin]
    slots: SpinLockIrq<KVec<Option<SendSlot>>>,
    next_agent: AtomicU32,
    /// The receive generation (16 bits): a recovery starts a new one once
    /// QP1 is in RESET, and a receive completion of an older one (taken
    /// by the provider before QP1 left RTS, completed after its flush) is
    /// ignored and its slot not posted again (the recovery posted it). A
    /// slot is posted again under this lock, only if its completion is of
    /// the generation still current.
    #[pin]
    recv_gen: SpinLockIrq<u32>,
    closed: AtomicBool,
    /// The recovery work is queued or running.
    recovering: AtomicBool,
    /// Counters.
    pub counters: MadCounters,
    /// Fires at the earliest deadline of the agents' requests.
    #[pin]
    timer: Timer<MadPort>,
    /// Runs the deadlines (process context).
    #[pin]
    work: Work<MadPort>,
    /// Brings QP1 back to RTS (process context).
    #[pin]
    recover_work: Work<MadPort, 1>,
}

impl_has_work! {
    impl HasWork<Self> for MadPort { self.work }
    impl HasWork<Self, 1> for MadPort { self.recover_work }
}

impl WorkItem<1> for MadPort {
    type Pointer = Arc<MadPort>;

    fn run(this: Arc<MadPort>) {
        this.recover();
    }
}

impl WorkItem for MadPort {
    type Pointer = Arc<MadPort>;

    fn run(this: Arc<MadPort>) {
        this.tick();
    }
}

impl TimerItem for MadPort {
    fn timer(&self) -> &Timer<Self> {
        &self.timer
    }

    fn fired(this: Arc<Self>) {
        let _ = workqueue::system().enqueue::<Arc<MadPort>, 0>(this);
    }
}

impl MadPort {
    /// Opens QP1 of `port`: PD, CQ, QP, buffers; moves the QP to RTS and
    /// posts every receive buffer.
    fn open(dev: &Arc<Device>, port: u32) -> Result<Arc<MadPort>> {
        let pd = Pd::alloc(dev)?;
        let cq = Cq::alloc(
            dev,
            (RECV_SLOTS + SEND_SLOTS) as u32,
            PollCtx::UnboundWorkqueue,
        )?;
        let qp = Qp::create(
            pd.core(),
            &QpInitAttr {
                qp_type: QpType::Gsi,
                send_cq: cq.core(),
                recv_cq: cq.core(),
                srq: None,
                cap: QpCap {
                    max_send_wr: SEND_SLOTS as u32,
                    max_recv_wr: RECV_SLOTS as u32,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: true,
                port_num: port,
            },
        )?;
        let len = RECV_SLOTS * RECV_LEN + SEND_SLOTS * MAD_SIZE;
        let buf = Buffer::new(len)?;
        let mr = Mr::reg_buffer(pd.core(), &buf, 0, len, Access::LOCAL_WRITE)?;
        Self::bring_up(&qp, port)?;
        let mut slots = KVec::with_capacity(SEND_SLOTS, GFP_KERNEL)?;
        for _ in 0..SEND_SLOTS {
            slots.push(None, GFP_KERNEL)?;
        }
        let qp_core = qp.core().clone();
        let pd_core = pd.core().clone();
        let lkey = mr.lkey();
        let verbs = TakeOnce::new(Verbs {
            _qp: qp,
            _mr: mr,
            _cq: cq,
            _pd: pd,
        });
        let this = Arc::pin_init(
            pin_init!(MadPort {
                dev: dev.clone(),
                port,
                qp: qp_core,
                pd: pd_core,
                lkey,
                buf,
                verbs,
                me <- crate::new_spinlock_irq!(None, "MadPort::me"),
                agents <- new_mutex!(KVec::new(), "MadPort::agents"),
                slots <- crate::new_spinlock_irq!(slots, "MadPort::slots"),
                next_agent: AtomicU32::new(crate::kshim::random::u32() & 0xffff),
                closed: AtomicBool::new(false),
                recv_gen <- crate::new_spinlock_irq!(0, "MadPort::recv_gen"),
                recovering: AtomicBool::new(false),
                counters: MadCounters::default(),
                timer <- Timer::new(),
                work <- new_work!("MadPort::work"),
                recover_work <- new_work!("MadPort::recover_work"),
            }),
            GFP_KERNEL,
        )?;
        *this.me.lock() = Some(this.clone());
        if let Err(e) = this.post_all_recvs() {
            this.close();
            return Err(e);
        }
        Ok(this)
    }

    /// Moves QP1 from RESET to INIT, RTR and RTS.
    fn bring_up(qp: &Arc<QpCore>, port: u32) -> Result {
        let mut cur = QpState::Reset;
        for next in [QpState::Init, QpState::Rtr, QpState::Rts] {
            let mask = required_attrs(cur, next, QpType::Gsi).ok_or(EINVAL)? | AttrMask::STATE;
            let attr = QpAttr {
                qp_state: next,
                qkey: QP1_QKEY,
                pkey_index: 0,
                port_num: port,
                sq_psn: 0,
                ..QpAttr::default()
            };
            qp.modify(&attr, mask)?;
            cur = next;
        }
        Ok(())
    }

    /// Posts every receive buffer (QP1 just made ready, nothing posted).
    fn post_all_recvs(&self) -> Result {
        let gen = *self.recv_gen.lock();
        for slot in 0..RECV_SLOTS {
            self.post_recv(slot, gen)?;
        }
        Ok(())
    }

    /// Posts `slot` again after its completion of generation `gen`,
    /// unless a recovery started another generation since.
    fn repost(&self, slot: usize, gen: u32) -> Result {
        let g = self.recv_gen.lock();
        if *g != gen {
            return Ok(());
        }
        self.post_recv(slot, gen)
    }

    /// A work request completed in error: if QP1 left RTS, queue its
    /// recovery (once). Any context.
    fn check_qp1(&self) {
        if self.closed.load(Ordering::Acquire) || self.qp.state() == QpState::Rts {
            return;
        }
        if self.recovering.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(me) = self.me.lock().clone() else {
            self.recovering.store(false, Ordering::Release);
            return;
        };
        if workqueue::system().enqueue::<Arc<MadPort>, 1>(me).is_err() {
            self.recovering.store(false, Ordering::Release);
        }
    }

    /// Brings QP1 back to RTS (the recovery work; process context): drain
    /// (the completions of everything posted so far handled: the flushed
    /// receives are not posted again by [`MadPort::received`]), RESET,
    /// INIT, RTR, RTS, every receive buffer posted again.
    fn recover(self: &Arc<Self>) {
        let done = if self.closed.load(Ordering::Acquire) || self.qp.state() == QpState::Rts {
            None
        } else {
            Some((|| -> Result {
                self.qp.drain()?;
                let attr = QpAttr {
                    qp_state: QpState::Reset,
                    ..QpAttr::default()
                };
                self.qp.modify(&attr, AttrMask::STATE)?;
                // Nothing of the old generation is posted any more.
                {
                    let mut g = self.recv_gen.lock();
                    *g = g.wrapping_add(1) & 0xffff;
                }
                if self.closed.load(Ordering::Acquire) {
                    return Ok(());
                }
                Self::bring_up(&self.qp, self.port)?;
                self.post_all_recvs()
            })())
        };
        self.recovering.store(false, Ordering::Release);
        match done {
            None => {}
            Some(Ok(())) => {
                MadCounters::bump(&self.counters.qp1_recoveries);
                if crate::kshim::ratelimit::log_allowed() {
                    pr_warn!(
                        "rdma mad: {} port {}: QP1 had left RTS; brought back\n",
                        self.dev.name(),
                        self.port
                    );
                }
            }
            Some(Err(e)) => {
                if crate::kshim::ratelimit::log_allowed() {
                    pr_err!(
                        "rdma mad: {} port {}: QP1 left RTS and could not be brought back ({:?})\n",
                        self.dev.name(),
                        self.port,
                        e
                    );
                }
            }
        }
    }

    /// Closes the port: no completion, timeout or dispatch after this
    /// returns. Process context.
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        // A recovery in progress first, while QP1 and its CQ still work
        // (its drain waits for a completion); one queued later finds the
        // port closed.
        crate::kshim::work::flush(&self.recover_work);
        // The QP next: its work requests (each holding the port) are
        // discarded and the provider stops; the CQ next, which waits for a
        // running completion handler.
        drop(self.verbs.take());
        self.timer.shutdown();
        crate::kshim::work::flush(&self.work);
        crate::kshim::work::flush(&self.recover_work);
        self.me.lock().take();
        let slots: KVec<Option<SendSlot>> = {
            let mut s = self.slots.lock();
            let mut out = KVec::new();
            for slot in s.iter_mut() {
                if let Some(x) = slot.take() {
                    let _ = out.push(Some(x), GFP_ATOMIC);
                }
            }
            out
        };
        drop(slots);
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// The port number.
    pub fn port_num(&self) -> u32 {
        self.port
    }

    fn me(&self) -> Option<Arc<dyn CqeDone>> {
        let me = self.me.lock().clone()?;
        Some(me)
    }

    fn post_recv(&self, slot: usize, gen: u32) -> Result {
        let sg = [self.buf.sge(slot * RECV_LEN, RECV_LEN as u32, self.lkey)?];
        self.qp
            .post_recv(&[RecvWr {
                wr_id: slot as u64 | u64::from(gen & 0xffff) << GEN_SHIFT,
                cqe: Some(self.me().ok_or(ENXIO)?),
                sg: &sg,
            }])
            .map_err(|(_, e)| e)
    }

    /// A new agent number (the high half of its transaction IDs).
    pub(crate) fn agent_id(&self) -> u32 {
        self.next_agent.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends `mad` to `to`. `notify` names the agent and cookie to tell
    /// when the send completes. Any context but a hard interrupt.
    pub(crate) fn post(
        &self,
        to: &MadAddr,
        mad: &[u8; MAD_SIZE],
        notify: Option<(u32, u64)>,
    ) -> Result {
        if self.closed.load(Ordering::Acquire) {
            return Err(ENXIO);
        }
        let mut attr = to.ah;
        attr.port_num = self.port;
        let ah = Ah::create(&self.pd, &attr)?;
        let ah_core = ah.core().clone();
        let slot = {
            let mut s = self.slots.lock();
            let free = s.iter().position(|x| x.is_none()).ok_or(ENOMEM)?;
            if let Some(x) = s.get_mut(free) {
                *x = Some(SendSlot { _ah: ah, notify });
            }
            free
        };
        let off = RECV_SLOTS * RECV_LEN + slot * MAD_SIZE;
        let sent = (|| {
            self.buf.write(off, mad)?;
            let sg = [self.buf.sge(off, MAD_SIZE as u32, self.lkey)?];
            let mut wr = SendWr::new(SEND_BIT | slot as u64, SendOp::Send, &sg);
            wr.cqe = Some(self.me().ok_or(ENXIO)?);
            wr.ud = Some(UdDest {
                ah: &ah_core,
                remote_qpn: to.remote_qpn,
                remote_qkey: QP1_QKEY,
            });
            self.qp.post_send(&[wr]).map_err(|(_, e)| e)
        })();
        if sent.is_err() {
            let undone = self.slots.lock().get_mut(slot).and_then(|x| x.take());
            drop(undone);
        }
        sent
    }

    /// A send completed.
    fn send_completed(&self, slot: usize, wc: &Wc) {
        let done = self.slots.lock().get_mut(slot).and_then(|s| s.take());
        let Some(done) = done else { return };
        let ok = wc.status == WcStatus::Success;
        MadCounters::bump(if ok {
            &self.counters.tx
        } else {
            &self.counters.tx_errors
        });
        let status = if ok {
            SendStatus::Sent
        } else {
            SendStatus::Failed(wc.status)
        };
        if let Some((agent, cookie)) = done.notify {
            if let Some(a) = self.find_agent(|a| a.id == agent) {
                a.send_finished(cookie, status);
            }
        }
        // A request that waits for its response and failed to go out is
        // sent again at its deadline, like a lost one.
        drop(done);
    }

    fn find_agent(&self, f: impl Fn(&AgentCore) -> bool) -> Option<Arc<AgentCore>> {
        let agents = self.agents.lock();
        agents.iter().find(|a| f(a)).cloned()
    }

    /// A receive completed.
    fn received(&self, slot: usize, gen: u32, wc: &Wc) {
        if wc.status != WcStatus::Success {
            if wc.status != WcStatus::WrFlushErr && !self.closed.load(Ordering::Acquire) {
                MadCounters::bump(&self.counters.rx_bad);
                let _ = self.repost(slot, gen);
            }
            return;
        }
        let mut raw = [0u8; RECV_LEN];
        let read = self.buf.read(slot * RECV_LEN, &mut raw);
        if !self.closed.load(Ordering::Acquire) && self.repost(slot, gen).is_err() {
            if crate::kshim::ratelimit::log_allowed() {
                pr_warn!(
                    "rdma mad: {} port {}: a receive buffer was lost\n",
                    self.dev.name(),
                    self.port
                );
            }
        }
        if read.is_err() || (wc.byte_len as usize) < RECV_LEN {
            MadCounters::bump(&self.counters.rx_bad);
            return;
        }
        let mut grh = [0u8; GRH_LEN];
        grh.copy_from_slice(&raw[..GRH_LEN]);
        let mut data = [0u8; MAD_SIZE];
        data.copy_from_slice(&raw[GRH_LEN..]);
        let (Ok(hdr), Ok(ah)) = (
            MadHeader::parse(&data),
            AhAttr::from_wc(&self.dev, self.port, wc, &grh),
        ) else {
            MadCounters::bump(&self.counters.rx_bad);
            return;
        };
        let addr = MadAddr {
            ah,
            remote_qpn: wc.src_qp,
            pkey_index: wc.pkey_index,
        };
        let mut mad = RecvMad {
            hdr,
            data,
            addr,
            response_to: None,
        };
        if hdr.method & METHOD_RESP != 0 {
            let agent = crate::spec::mad_send::TidSource::agent_of(hdr.tid);
            let Some(a) = self.find_agent(|a| a.id == agent) else {
                MadCounters::bump(&self.counters.rx_unmatched);
                return;
            };
            match a.take_response(&hdr) {
                Some(cookie) => {
                    mad.response_to = Some(cookie);
                    MadCounters::bump(&self.counters.rx);
                    a.deliver(&mad);
                }
                None => MadCounters::bump(&self.counters.rx_unmatched),
            }
            return;
        }
        match self.find_agent(|a| {
            a.class == hdr.mgmt_class && a.class_version == hdr.class_version && a.takes(hdr.method)
        }) {
            Some(a) => {
                MadCounters::bump(&self.counters.rx);
                a.deliver(&mad);
            }
            None => {
                MadCounters::bump(&self.counters.rx_unmatched);
                if matches!(hdr.method, METHOD_GET | METHOD_SET) {
                    self.unsupported(&mad);
                }
            }
        }
    }

    /// Answers a GET or SET nobody takes (the C layer's unmatched
    /// response): same header, method GET_RESP, status "unsupported
    /// method/attribute", the data sent back.
    fn unsupported(&self, mad: &RecvMad) {
        let hdr = MadHeader {
            method: METHOD_GET_RESP,
            status: STATUS_UNSUPPORTED_METHOD_ATTRIB,
            ..mad.hdr
        };
        let mut out = mad.data;
        if hdr.write(&mut out).is_ok() {
            let _ = self.post(&mad.addr, &out, None);
        }
    }

    /// Arms the timer for the earliest deadline of the agents.
    pub(crate) fn rearm(self: &Arc<Self>) {
        let next = {
            let agents = self.agents.lock();
            agents.iter().filter_map(|a| a.next_deadline()).min()
        };
        if let Some(at) = next {
            let now = now_ms();
            let us = at
                .saturating_sub(now)
                .saturating_mul(1000)
                .min(u64::from(u32::MAX));
            Timer::arm_us(self, us.max(1) as u32);
        }
    }

    /// The deadlines: retries and timeouts of every agent.
    fn tick(self: &Arc<Self>) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let agents: KVec<Arc<AgentCore>> = {
            let a = self.agents.lock();
            let mut v = KVec::new();
            for x in a.iter() {
                if v.push(x.clone(), GFP_KERNEL).is_err() {
                    break;
                }
            }
            v
        };
        let now = now_ms();
        for a in agents.iter() {
            a.on_tick(self, now);
        }
        self.rearm();
    }

    pub(crate) fn count_retry(&self) {
        MadCounters::bump(&self.counters.retries);
    }

    pub(crate) fn count_timeout(&self) {
        MadCounters::bump(&self.counters.timeouts);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

impl CqeDone for MadPort {
    fn done(&self, _cq: &CqCore, wc: &Wc) {
        if wc.wr_id & SEND_BIT != 0 || wc.opcode == WcOpcode::Send {
            self.send_completed((wc.wr_id & !SEND_BIT) as usize, wc);
        } else {
            let gen = (wc.wr_id >> GEN_SHIFT) as u32 & 0xffff;
            if gen == *self.recv_gen.lock() {
                self.received((wc.wr_id & 0xffff) as usize, gen, wc);
            }
        }
        if wc.status != WcStatus::Success {
            self.check_qp1();
        }
    }
}

/// The MAD ports of one device, by port number from 1.
pub struct MadPorts(KVec<Option<Arc<MadPort>>>);

/// The core's internal client that opens and closes QP1.
pub struct MadClient;

impl Client for MadClient {
    type Data = MadPorts;

    fn name(&self) -> &CStr {
        c_str!("mad")
    }

    fn add(&self, dev: &Arc<Device>) -> Result<MadPorts> {
        let mut ports = KVec::new();
        for port in 1..=dev.port_count() {
            let p = if dev.has_mad(port) {
                match MadPort::open(dev, port) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        pr_warn!("rdma mad: {} port {}: no QP1 ({:?})\n", dev.name(), port, e);
                        None
                    }
                }
            } else {
                None
            };
            if let Err(e) = ports.push(p, GFP_KERNEL) {
                for p in ports.iter().flatten() {
                    p.close();
                }
                return Err(e.into());
            }
        }
        Ok(MadPorts(ports))
    }

    fn remove(&self, _dev: &Arc<Device>, data: &MadPorts) {
        for p in data.0.iter().flatten() {
            p.close();
        }
    }
}

struct Registration(ClientRegistration<MadClient>);

static MAD: Global<Registration> = Global::new();

/// The MAD port `port` of `dev`, if it has one and is not closed.
pub(crate) fn port_of(dev: &Device, port: u32) -> Option<Arc<MadPort>> {
    let reg = MAD.get()?;
    let ports = reg.0.data(dev)?;
    let p = ports.0.get(port.checked_sub(1)? as usize)?.clone()?;
    (!p.is_closed()).then_some(p)
}

/// The counters of `dev`'s port `port`, if it has a MAD layer.
pub fn counters(dev: &Device, port: u32) -> Option<[(&'static str, u64); COUNTERS]> {
    Some(port_of(dev, port)?.counters.snapshot())
}

/// QP1 of `dev`'s port `port`, if it has a MAD layer: to look at its
/// state, or (a test) to move it out of RTS through `modify_qp` and watch
/// the MAD layer bring it back.
pub fn qp1(dev: &Device, port: u32) -> Option<Arc<QpCore>> {
    Some(port_of(dev, port)?.qp.clone())
}

/// The counters' directory in sysfs.
static PORT_GROUPS: [PortGroup; 1] = [PortGroup {
    name: c_str!("mad"),
    files: &COUNTER_NAMES,
}];

/// What the counter files show: the count, or zero where the MAD layer
/// does not run (yet, or any more) on the port.
struct CounterFiles;

impl PortGroupShow for CounterFiles {
    fn wants(&self, dev: &Device, port: u32) -> bool {
        dev.has_mad(port)
    }

    fn show(&self, dev: &Device, port: u32, _group: usize, file: usize, out: &mut Page) -> Result {
        let v = counters(dev, port)
            .and_then(|c| c.get(file).map(|x| x.1))
            .unwrap_or(0);
        writeln!(out, "{}", v).map_err(|_| EINVAL)
    }
}

/// The counters' files while the MAD layer is loaded; apart from [`MAD`]
/// and dropped before it, so that no `show` holds the last reference to
/// the client's registration.
static COUNTERS_SYSFS: Global<PortGroupsRegistration> = Global::new();

/// Registers the MAD client (module init, before any ULP) and its
/// counters' files.
pub(crate) fn init() -> Result {
    let reg = ClientRegistration::new(MadClient)?;
    MAD.replace(Some(Arc::new(Registration(reg), GFP_KERNEL)?));
    let files = (|| -> Result<Arc<PortGroupsRegistration>> {
        let f = crate::device::sysfs::register_port_groups(
            &PORT_GROUPS,
            Arc::new(CounterFiles, GFP_KERNEL)?,
        )?;
        Ok(Arc::new(f, GFP_KERNEL)?)
    })();
    match files {
        Ok(f) => {
            drop(COUNTERS_SYSFS.replace(Some(f)));
            Ok(())
        }
        Err(e) => {
            exit();
            Err(e)
        }
    }
}

/// Unregisters them (module exit): the files first.
pub(crate) fn exit() {
    drop(COUNTERS_SYSFS.replace(None));
    drop(MAD.replace(None));
}
