// SPDX-License-Identifier: GPL-2.0

//! MAD agents (`ib_register_mad_agent`, `ib_post_send_mad`,
//! `ib_cancel_mad`): a ULP's endpoint on a port's QP1.
//!
//! An agent takes the requests of one management class and class version
//! that arrive on its port (of every method, or of those it names with
//! [`AgentCore::take_only`]: the others are unmatched, and a GET or SET
//! is answered as unsupported, as the C layer's method table does), and the responses to its own requests. Every
//! send ends with exactly one [`MadHandler::send_done`]: when it has gone
//! out (no response expected), when its response arrived (after the
//! response's [`MadHandler::recv`]), after its last retry, or when it
//! could not be sent. Dropping the [`Agent`] ends the agent: no handler
//! runs after the drop returns, and requests still waiting are forgotten
//! without a `send_done`.

use core::sync::atomic::{AtomicU64, Ordering};

use kernel::error::code::{EBUSY, EEXIST, EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};

use crate::device::Device;
use crate::kshim::time::now_ms;
use crate::kshim::vec::{clear, retain};
use crate::mad::port::{port_of, MadPort};
use crate::spec::mad::{MadHeader, MAD_SIZE};
use crate::spec::mad_send::{Action, Outstanding, Retry, StartError, TidSource};
use crate::spec::opcodes::WcStatus;
use crate::verbs::ah::AhAttr;

/// Requests one agent can have waiting for their responses.
pub const MAX_OUTSTANDING: usize = 64;

/// Where a MAD goes, or where a received one came from (the C layer's
/// `ib_ah` + remote QPN of `ib_mad_send_buf`, or its `ib_wc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MadAddr {
    /// The remote port (the port number is the agent's).
    pub ah: AhAttr,
    /// The remote QP: 1 for the GSI.
    pub remote_qpn: u32,
    /// P_Key index the MAD came with.
    pub pkey_index: u16,
}

/// A received MAD.
#[derive(Clone, Copy)]
pub struct RecvMad {
    /// Its header, parsed.
    pub hdr: MadHeader,
    /// All of it, header included.
    pub data: [u8; MAD_SIZE],
    /// The sender: send to this to answer.
    pub addr: MadAddr,
    /// For a response: the cookie of the request it answers.
    pub response_to: Option<u64>,
}

/// How a send ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendStatus {
    /// Sent (no response was expected).
    Sent,
    /// Its response arrived (and went to `recv` first).
    Responded,
    /// No response after the last retry.
    TimedOut,
    /// The device could not send it.
    Failed(WcStatus),
}

/// What an agent's owner is called with. Process context; calls may run
/// concurrently (receives and timeouts come from different work items).
pub trait MadHandler: Send + Sync {
    /// A MAD for this agent arrived.
    fn recv(&self, agent: &AgentCore, mad: &RecvMad);

    /// A send with this cookie ended.
    fn send_done(&self, agent: &AgentCore, cookie: u64, status: SendStatus);

    /// A request with this cookie was sent again (a retry), for the
    /// owner's counters. Nothing by default.
    fn resent(&self, _agent: &AgentCore, _cookie: u64) {}
}

/// How to send ([`AgentCore::send`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SendOpts {
    /// Comes back with the outcome.
    pub cookie: u64,
    /// Wait for a response with this timeout and these retries; `None`
    /// for a MAD that is not answered.
    pub retry: Option<Retry>,
}

/// A request waiting: what a retry sends again.
struct Pending {
    tid: u64,
    class: u8,
    to: MadAddr,
    mad: KBox<[u8; MAD_SIZE]>,
}

struct State {
    /// Unregistered: no more handler calls.
    dead: bool,
    /// Handler calls running.
    calls: u32,
    tids: TidSource,
    out: Outstanding<MAX_OUTSTANDING>,
    pending: KVec<Pending>,
}

/// An agent, as its port and its handler see it.
#[pin_data]
pub struct AgentCore {
    pub(crate) id: u32,
    pub(crate) class: u8,
    pub(crate) class_version: u8,
    /// The request methods taken, a bit each (0 to 127).
    methods: [AtomicU64; 2],
    port: Arc<MadPort>,
    handler: Arc<dyn MadHandler>,
    #[pin]
    state: Mutex<State>,
    #[pin]
    idle: CondVar,
}

/// A registered agent; unregistered when dropped.
pub struct Agent(Arc<AgentCore>);

impl core::ops::Deref for Agent {
    type Target = AgentCore;

    fn deref(&self) -> &AgentCore {
        &self.0
    }
}

impl Agent {
    /// The agent's shared part, to send through from elsewhere: sends keep
    /// working after the agent is dropped (until the port closes), but no
    /// handler runs then.
    pub fn shared(&self) -> Arc<AgentCore> {
        self.0.clone()
    }

    /// Registers an agent for `class` version `class_version` on `dev`'s
    /// port `port`: `ENODEV` if the port has no MAD layer, `EBUSY` if
    /// another agent has that class and version there. May sleep.
    pub fn register(
        dev: &Device,
        port: u32,
        class: u8,
        class_version: u8,
        handler: Arc<dyn MadHandler>,
    ) -> Result<Agent> {
        let mp = port_of(dev, port).ok_or(ENODEV)?;
        let id = mp.agent_id();
        let tids = TidSource::new(id, crate::kshim::random::u32());
        let port_ref = mp.clone();
        let core = Arc::pin_init(
            pin_init!(AgentCore {
                id,
                class,
                class_version,
                methods: [AtomicU64::new(u64::MAX), AtomicU64::new(u64::MAX)],
                port: port_ref,
                handler,
                state <- new_mutex!(
                    State {
                        dead: false,
                        calls: 0,
                        tids,
                        out: Outstanding::new(),
                        pending: KVec::new(),
                    },
                    "AgentCore::state"
                ),
                idle <- new_condvar!("AgentCore::idle"),
            }),
            GFP_KERNEL,
        )?;
        let mut agents = mp.agents.lock();
        if agents
            .iter()
            .any(|a| a.class == class && a.class_version == class_version)
        {
            return Err(EBUSY);
        }
        agents.push(core.clone(), GFP_KERNEL)?;
        Ok(Agent(core))
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        {
            let mut agents = self.0.port.agents.lock();
            retain(&mut agents, |a| !Arc::ptr_eq(a, &self.0));
        }
        let mut st = self.0.state.lock();
        st.dead = true;
        while st.calls > 0 {
            self.0.idle.wait(&mut st);
        }
        st.out = Outstanding::new();
        clear(&mut st.pending);
    }
}

impl AgentCore {
    /// The device.
    pub fn device(&self) -> &Arc<Device> {
        self.port.device()
    }

    /// The port number.
    pub fn port_num(&self) -> u32 {
        self.port.port_num()
    }

    /// Takes only requests of these methods from now on (the CM takes
    /// SENDs only); responses to its own requests still come.
    pub fn take_only(&self, methods: &[u8]) {
        let mut m = [0u64; 2];
        for &x in methods {
            let x = x & 0x7f;
            m[usize::from(x >> 6)] |= 1 << (x & 63);
        }
        self.methods[0].store(m[0], Ordering::Relaxed);
        self.methods[1].store(m[1], Ordering::Relaxed);
    }

    /// Whether the agent takes requests of `method`.
    pub(crate) fn takes(&self, method: u8) -> bool {
        let x = method & 0x7f;
        self.methods[usize::from(x >> 6)].load(Ordering::Relaxed) & (1 << (x & 63)) != 0
    }

    /// A fresh transaction ID: the agent's number in the high half, so
    /// that the response finds this agent.
    pub fn new_tid(&self) -> u64 {
        self.state.lock().tids.next_tid()
    }

    /// Sends `mad` (header included) to `to`. With `opts.retry`, the
    /// transaction ID and class of the MAD's header identify the request
    /// and its response (`EEXIST` if that one waits already, `EBUSY` if
    /// [`MAX_OUTSTANDING`] do). Process context.
    pub fn send(&self, to: &MadAddr, mad: &[u8; MAD_SIZE], opts: SendOpts) -> Result {
        let hdr = MadHeader::parse(mad).map_err(|_| EINVAL)?;
        let Some(retry) = opts.retry else {
            return self.port.post(to, mad, Some((self.id, opts.cookie)));
        };
        let copy = KBox::new(*mad, GFP_KERNEL)?;
        {
            let mut st = self.state.lock();
            if st.dead {
                return Err(ENODEV);
            }
            st.pending.reserve(1, GFP_KERNEL)?;
            st.out
                .start(hdr.tid, hdr.mgmt_class, opts.cookie, now_ms(), retry)
                .map_err(|e| match e {
                    StartError::Full => EBUSY,
                    StartError::Duplicate => EEXIST,
                    StartError::NoTimeout => EINVAL,
                })?;
            st.pending.push(
                Pending {
                    tid: hdr.tid,
                    class: hdr.mgmt_class,
                    to: *to,
                    mad: copy,
                },
                GFP_KERNEL,
            )?;
        }
        if let Err(e) = self.port.post(to, mad, None) {
            self.forget(hdr.tid, hdr.mgmt_class);
            return Err(e);
        }
        self.port.rearm();
        Ok(())
    }

    /// Stops waiting for the response to request `tid` (`ib_cancel_mad`);
    /// its `send_done` does not come. Whether it was waiting.
    pub fn cancel(&self, tid: u64) -> bool {
        self.forget(tid, self.class).is_some()
    }

    /// Pushes the deadline of request `tid` to `extra_ms` from now
    /// (`ib_modify_mad`, as a CM MRA asks). Whether it was waiting.
    pub fn extend(&self, tid: u64, extra_ms: u64) -> bool {
        let done = self
            .state
            .lock()
            .out
            .extend(tid, self.class, now_ms(), extra_ms);
        if done {
            self.port.rearm();
        }
        done
    }

    fn forget(&self, tid: u64, class: u8) -> Option<u64> {
        let mut st = self.state.lock();
        let cookie = st.out.cancel(tid, class)?;
        retain(&mut st.pending, |p| !(p.tid == tid && p.class == class));
        Some(cookie)
    }

    /// A response arrived: the cookie of the request it answers, which
    /// stops waiting.
    pub(crate) fn take_response(&self, hdr: &MadHeader) -> Option<u64> {
        self.forget(hdr.tid, hdr.mgmt_class)
    }

    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.state.lock().out.next_deadline()
    }

    /// Runs a handler call unless the agent is unregistered.
    fn call(&self, f: impl FnOnce()) {
        {
            let mut st = self.state.lock();
            if st.dead {
                return;
            }
            st.calls += 1;
        }
        f();
        let mut st = self.state.lock();
        st.calls -= 1;
        if st.calls == 0 {
            self.idle.notify_all();
        }
    }

    /// Hands a received MAD to the handler; a response also ends its
    /// request.
    pub(crate) fn deliver(&self, mad: &RecvMad) {
        self.call(|| self.handler.recv(self, mad));
        if let Some(cookie) = mad.response_to {
            self.send_finished(cookie, SendStatus::Responded);
        }
    }

    pub(crate) fn send_finished(&self, cookie: u64, status: SendStatus) {
        self.call(|| self.handler.send_done(self, cookie, status));
    }

    /// Deadlines at `now`: resends and timeouts.
    pub(crate) fn on_tick(&self, port: &MadPort, now: u64) {
        let mut resend: KVec<(MadAddr, KBox<[u8; MAD_SIZE]>, u64)> = KVec::new();
        let mut timed_out: KVec<u64> = KVec::new();
        {
            let mut guard = self.state.lock();
            let st = &mut *guard;
            let mut gone: KVec<u64> = KVec::new();
            let pending = &st.pending;
            st.out.on_tick(now, |a| match a {
                Action::Resend { tid, cookie, .. } => {
                    if let Some(p) = pending.iter().find(|p| p.tid == tid) {
                        if let Ok(b) = KBox::new(*p.mad, GFP_KERNEL) {
                            let _ = resend.push((p.to, b, cookie), GFP_KERNEL);
                        }
                    }
                }
                Action::TimedOut { tid, cookie } => {
                    let _ = timed_out.push(cookie, GFP_KERNEL);
                    let _ = gone.push(tid, GFP_KERNEL);
                }
            });
            retain(&mut st.pending, |p| !gone.contains(&p.tid));
        }
        for (to, mad, cookie) in resend.iter() {
            port.count_retry();
            self.call(|| self.handler.resent(self, *cookie));
            if port.post(to, mad, None).is_err() {
                // Lost like a dropped datagram: the next deadline retries.
            }
        }
        for cookie in timed_out.iter() {
            port.count_timeout();
            self.send_finished(*cookie, SendStatus::TimedOut);
        }
    }
}
