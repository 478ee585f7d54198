// SPDX-License-Identifier: GPL-2.0

//! One end of one IB CM connection (`struct cm_id_private` of cm.c): the
//! host-tested state machine `spec::cm_state::Conn`, with what it needs
//! around it in the kernel: the messages it sent (resent on its timer),
//! the address of the peer's CM, the agent it sends through, and the user
//! above it (the rdma_cm id, [`ConnUser`]).
//!
//! Every input takes the connection's lock, runs the state machine, builds
//! the messages its actions name, and lets go of the lock; then the
//! messages are sent, the CM's timer is re-armed and the events go to the
//! user, with no CM lock held. The connections live in the CM's table
//! ([`super::table`]) from their first message until they are idle again
//! (after a REJ, a timeout or timewait); their user holds them as long as
//! it likes. After each change of its state a connection gives the table
//! its keys (peer, peer QP, deadline, half-open: [`CmConn::sync`]) under
//! its own lock, which comes before the table's.

use kernel::error::code::{EBUSY, EINVAL};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use crate::cm::counters::{DropReason, Group};
use crate::cm::port::CmPortShared;
use crate::cm::table;
use crate::kshim::time::now_ms;
use crate::mad::{MadAddr, SendOpts};
use crate::spec::cm_msg::{
    Bytes, CmMessage, Drep, Dreq, Mra, MsgResponse, Rej, RejReason, Rep, Req, Rtu,
    REJ_PRIVATE_DATA_LEN,
};
use crate::spec::cm_state::{AcceptParams, Action, Actions, ConnectParams, Event, State};
use crate::spec::cm_table::Keys;
use crate::spec::mad::MAD_SIZE;

/// What the user of a connection is told.
#[derive(Clone, Copy, Debug)]
pub enum ConnEvent {
    /// Established (passive: the RTU came; active: the RTU went).
    Established,
    /// The peer rejected: its reason and all of its private data.
    Rejected {
        /// The REJ's reason.
        reason: u16,
        /// Its private data.
        private_data: [u8; REJ_PRIVATE_DATA_LEN],
    },
    /// No answer to the REQ or REP after its retries.
    Unreachable,
    /// Disconnected (a DREQ came, or our DREQ was answered or timed out).
    Disconnected,
    /// Active side: the REP was taken and its RTU is held
    /// ([`RepAnswer::Hold`]) until [`CmConn::send_rtu`].
    RepHeld,
    /// Timewait is over.
    TimewaitExit,
}

/// What the active side does with a REP it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepAnswer {
    /// The RTU goes now, and the connection is established.
    Rtu,
    /// The RTU waits for [`CmConn::send_rtu`] (a QP of user space's, which
    /// user space moves to RTR and RTS first); no `Established` event.
    Hold,
}

/// The user of a connection (the rdma_cm id above it).
pub trait ConnUser: Send + Sync {
    /// Active side: the REP arrived. Runs before the RTU is sent, so the
    /// user can move its QP to RTR and RTS first, or say that it will
    /// later ([`RepAnswer::Hold`]); an error rejects the connection
    /// (CONSUMER_DEFINED, as rdma_cm does when that fails).
    fn rep_received(&self, conn: &Arc<CmConn>, rep: &Rep) -> Result<RepAnswer>;

    /// An event of the connection. CM context (process), no CM lock held;
    /// the user must not block here on the CM.
    fn event(&self, conn: &Arc<CmConn>, ev: ConnEvent);
}

struct ConnState {
    conn: crate::spec::cm_state::Conn,
    /// The peer's node GUID (with its comm ID, the key of duplicates).
    remote_guid: u64,
    /// The peer's communication ID, kept when the state machine forgets
    /// it (a REJ it asks for after going back to idle still names it).
    peer_id: u32,
    /// Our REQ, REP and DREQ as sent, for resends.
    req: Option<[u8; MAD_SIZE]>,
    rep: Option<[u8; MAD_SIZE]>,
    dreq: Option<[u8; MAD_SIZE]>,
    /// Transaction ID of what we started (REQ or REP) and of our DREQ.
    tid: u64,
    /// Transaction ID of the peer's last message that we answer.
    their_tid: u64,
    /// Private data of the REJ the user asked for.
    rej_data: [u8; REJ_PRIVATE_DATA_LEN],
    /// Whether the REQ, REP, DREQ went once (later sends are retries).
    sent: [bool; 3],
    /// The user holds the RTU back ([`RepAnswer::Hold`]) until
    /// [`CmConn::send_rtu`]: a duplicate REP meanwhile gets no RTU.
    rtu_held: bool,
    user: Option<Arc<dyn ConnUser>>,
}

/// One end of one connection.
#[pin_data]
pub struct CmConn {
    port: Arc<CmPortShared>,
    addr: MadAddr,
    #[pin]
    st: Mutex<ConnState>,
}

/// What an input left to do once the lock is released.
struct Todo {
    msgs: KVec<(CmMessage, u64)>,
    resend: KVec<([u8; MAD_SIZE], bool)>,
    events: KVec<ConnEvent>,
    user: Option<Arc<dyn ConnUser>>,
}

impl CmConn {
    /// A connection end on `port` whose peer's CM is at `addr`.
    pub(crate) fn new(port: Arc<CmPortShared>, addr: MadAddr) -> Result<Arc<CmConn>> {
        let id = table::new_comm_id();
        Arc::pin_init(
            pin_init!(CmConn {
                port,
                addr,
                st <- new_mutex!(
                    ConnState {
                        conn: crate::spec::cm_state::Conn::new(id),
                        remote_guid: 0,
                        peer_id: 0,
                        req: None,
                        rep: None,
                        dreq: None,
                        tid: 0,
                        their_tid: 0,
                        rej_data: [0; REJ_PRIVATE_DATA_LEN],
                        sent: [false; 3],
                        rtu_held: false,
                        user: None,
                    },
                    "CmConn::st"
                ),
            }),
            GFP_KERNEL,
        )
    }

    /// Our communication ID.
    pub fn local_comm_id(&self) -> u32 {
        self.st.lock().conn.local_comm_id()
    }

    /// The peer's communication ID, once known.
    pub fn remote_comm_id(&self) -> Option<u32> {
        self.st.lock().conn.remote_comm_id()
    }

    /// The state.
    pub fn state(&self) -> State {
        self.st.lock().conn.state()
    }

    /// The port's shared part.
    pub(crate) fn port(&self) -> &Arc<CmPortShared> {
        &self.port
    }

    /// Gives the table this connection's keys as its state has them now
    /// (an idle connection leaves it). Its lock is held meanwhile, so the
    /// table never gets an older state after a newer one.
    pub(crate) fn sync(self: &Arc<Self>) {
        let st = self.st.lock();
        let state = st.conn.state();
        let guid = st.remote_guid;
        let keys = Keys {
            peer: st.conn.remote_comm_id().map(|c| (c, guid)),
            remote_qp: st
                .conn
                .remote_qpn()
                .filter(|_| state != State::Idle)
                .map(|q| (q, guid)),
            deadline: st.conn.deadline(),
            half_open: !st.conn.is_active()
                && matches!(
                    state,
                    State::ReqRcvd | State::MraReqSent | State::RepSent | State::MraRepRcvd
                ),
        };
        table::sync(self, st.conn.local_comm_id(), state == State::Idle, &keys);
    }

    /// Sets the user.
    pub fn set_user(&self, user: Option<Arc<dyn ConnUser>>) {
        self.st.lock().user = user;
    }

    /// Active: sends `req` (its local comm ID is set here) and waits for
    /// the answer (`ib_send_cm_req`). `packet_life_time` is the path's.
    pub(crate) fn connect(self: &Arc<Self>, mut req: Req, packet_life_time: u8) -> Result {
        let mut st = self.st.lock();
        if st.conn.state() != State::Idle {
            return Err(EBUSY);
        }
        req.local_comm_id = st.conn.local_comm_id();
        let tid = self.port.new_tid()?;
        let mut mad = [0u8; MAD_SIZE];
        CmMessage::Req(req)
            .write_mad(tid, 0, &mut mad)
            .map_err(|_| EINVAL)?;
        st.tid = tid;
        st.req = Some(mad);
        let acts = st
            .conn
            .connect(now_ms(), ConnectParams::from_req(&req, packet_life_time));
        drop(st);
        // In the table before the REQ goes: its answer may come first.
        table::insert(self)?;
        self.sync();
        self.run(acts)
    }

    /// Passive: a REQ arrived for a new connection (the table saw no
    /// duplicate and admitted it as half-open): the state machine takes
    /// it.
    pub(crate) fn on_new_req(self: &Arc<Self>, req: &Req, tid: u64) -> Result {
        let acts = {
            let mut st = self.st.lock();
            st.remote_guid = req.local_ca_guid;
            st.peer_id = req.local_comm_id;
            st.their_tid = tid;
            st.conn.on_req(req, now_ms())
        };
        self.sync();
        self.run(acts)
    }

    /// Passive: accepts with `rep` (`ib_send_cm_rep`; IDs filled here).
    pub fn accept(self: &Arc<Self>, mut rep: Rep) -> Result {
        let mut st = self.st.lock();
        if !matches!(st.conn.state(), State::ReqRcvd | State::MraReqSent) {
            return Err(EINVAL);
        }
        rep.local_comm_id = st.conn.local_comm_id();
        rep.remote_comm_id = st.conn.remote_comm_id().unwrap_or(0);
        let mut mad = [0u8; MAD_SIZE];
        CmMessage::Rep(rep)
            .write_mad(st.their_tid, 0, &mut mad)
            .map_err(|_| EINVAL)?;
        st.tid = st.their_tid;
        st.rep = Some(mad);
        let acts = st.conn.accept(
            now_ms(),
            AcceptParams {
                local_qpn: rep.local_qpn,
            },
        );
        drop(st);
        self.run(acts)
    }

    /// Passive: asks for more time to answer the REQ, delayed
    /// (`ib_send_cm_mra` with `IB_CM_MRA_FLAG_DELAY`, as rdma_cm does when
    /// its consumer has not accepted from within the REQ event): nothing
    /// goes now; a duplicate REQ is answered by an MRA of
    /// `service_timeout` (IBA time). Only in `ReqRcvd`.
    pub fn mra_delayed(self: &Arc<Self>, service_timeout: u8) {
        let acts = self
            .st
            .lock()
            .conn
            .send_mra(now_ms(), service_timeout, true);
        if !acts.is_drop() {
            let _ = self.run(acts);
        }
    }

    /// Rejects with `reason` and private data (`ib_send_cm_rej`): legal
    /// until established.
    pub fn reject(self: &Arc<Self>, reason: RejReason, private_data: &[u8]) -> Result {
        let mut st = self.st.lock();
        let n = private_data.len().min(REJ_PRIVATE_DATA_LEN);
        st.rej_data = [0; REJ_PRIVATE_DATA_LEN];
        st.rej_data[..n].copy_from_slice(&private_data[..n]);
        let acts = st.conn.reject(now_ms(), reason, n as u8);
        drop(st);
        if acts.is_drop() {
            return Err(EINVAL);
        }
        self.run(acts)
    }

    /// Disconnects (`ib_send_cm_dreq`): legal when established.
    pub fn disconnect(self: &Arc<Self>) -> Result {
        let mut st = self.st.lock();
        if st.conn.state() != State::Established {
            return Err(EINVAL);
        }
        let tid = self.port.new_tid()?;
        let dreq = Dreq {
            local_comm_id: st.conn.local_comm_id(),
            remote_comm_id: st.conn.remote_comm_id().unwrap_or(0),
            remote_qpn_eecn: st.conn.remote_qpn().unwrap_or(0),
            ..Dreq::default()
        };
        let mut mad = [0u8; MAD_SIZE];
        CmMessage::Dreq(dreq)
            .write_mad(tid, 0, &mut mad)
            .map_err(|_| EINVAL)?;
        st.dreq = Some(mad);
        st.tid = tid;
        let acts = st.conn.disconnect(now_ms());
        drop(st);
        self.run(acts)
    }

    /// The user goes away (`ib_destroy_cm_id`): what is under way is ended
    /// as the C does (a REJ before establishment, a DREQ after), and no
    /// event reaches the user any more. The connection stays in the table
    /// until it is idle.
    pub fn destroy(self: &Arc<Self>) {
        let state = {
            let mut st = self.st.lock();
            st.user = None;
            st.conn.state()
        };
        let _ = match state {
            State::ReqSent | State::MraReqRcvd => self.reject(RejReason::Timeout, &[]),
            State::ReqRcvd | State::MraReqSent | State::RepSent | State::MraRepRcvd => {
                self.reject(RejReason::ConsumerDefined, &[])
            }
            State::Established => self.disconnect(),
            _ => Ok(()),
        };
        self.sync();
    }

    /// A CM message with this connection's ID arrived (the table found
    /// it). Returns false, having done nothing, if it is not this
    /// connection's by the C CM's rules (`cm_state::Conn::takes`: the
    /// peer's ID in it is not the connection's peer's): the caller then
    /// handles it as a message for no connection. Of the messages taken,
    /// one the state machine drops is counted as a duplicate where the C
    /// counts one, else as a drop of reason `unexpected`.
    pub(crate) fn on_msg(self: &Arc<Self>, msg: &CmMessage, tid: u64) -> bool {
        let now = now_ms();
        let mut rep = None;
        let acts = {
            let mut st = self.st.lock();
            if !st.conn.takes(msg) {
                return false;
            }
            st.their_tid = tid;
            let before = st.conn.state();
            let dup_if_dropped = st.conn.dropped_as_duplicate(msg);
            let acts = match msg {
                CmMessage::Req(m) => st.conn.on_req(m, now),
                CmMessage::Rep(m) => {
                    if matches!(before, State::ReqSent | State::MraReqRcvd) {
                        st.remote_guid = m.local_ca_guid;
                        st.peer_id = m.local_comm_id;
                        rep = Some(*m);
                    }
                    st.conn.on_rep(m, now)
                }
                CmMessage::Rtu(m) => st.conn.on_rtu(m, now),
                CmMessage::Rej(m) => st.conn.on_rej(m, now),
                CmMessage::Mra(m) => st.conn.on_mra(m, now),
                CmMessage::Dreq(m) => st.conn.on_dreq(m, now),
                CmMessage::Drep(m) => st.conn.on_drep(m, now),
            };
            // A message answered again in the state it led to (a REQ,
            // REP or DREQ) is a duplicate; a dropped one as the C counts
            // it.
            if acts.is_drop() {
                if dup_if_dropped {
                    self.port.counters.count(Group::RxDuplicates, msg.attr_id());
                } else {
                    self.port.counters.count_drop(DropReason::Unexpected);
                }
            } else if before == st.conn.state() {
                self.port.counters.count(Group::RxDuplicates, msg.attr_id());
            }
            acts
        };
        if acts.is_drop() {
            return true;
        }
        let mut acts = acts;
        let mut held = None;
        if let Some(rep) = rep {
            let user = self.st.lock().user.clone();
            match user.clone().map(|u| u.rep_received(self, &rep)) {
                Some(Ok(RepAnswer::Rtu)) => {}
                Some(Ok(RepAnswer::Hold)) => {
                    self.st.lock().rtu_held = true;
                    held = user;
                    acts = acts.without(|a| {
                        matches!(a, Action::SendRtu | Action::Event(Event::Established))
                    });
                }
                _ => {
                    self.refuse_rep();
                    return true;
                }
            }
        } else if self.st.lock().rtu_held {
            // A duplicate REP while the user holds the RTU: nothing yet.
            acts = acts.without(|a| matches!(a, Action::SendRtu));
        }
        let rej = match msg {
            CmMessage::Rej(r) => Some(r),
            _ => None,
        };
        let _ = self.run_with(acts, rej);
        // Told once the RTU is held, so that the user's `send_rtu` after
        // it finds it so.
        if let Some(u) = held {
            u.event(self, ConnEvent::RepHeld);
        }
        true
    }

    /// Passive: the QP received before the RTU came, so the connection is
    /// established (`ib_cm_notify` with `IB_EVENT_COMM_EST`); the user gets
    /// `Established` as if the RTU had come. `EINVAL` unless a REP was
    /// sent and not answered yet.
    pub fn established(self: &Arc<Self>) -> Result {
        let acts = {
            let mut st = self.st.lock();
            if !matches!(st.conn.state(), State::RepSent | State::MraRepRcvd) {
                return Err(EINVAL);
            }
            st.conn.established(now_ms())
        };
        self.run(acts)
    }

    /// Sends the RTU a user held back ([`RepAnswer::Hold`]). `EINVAL` if
    /// none is held or the connection has left the established state
    /// meanwhile (a DREQ or a REJ came first).
    pub fn send_rtu(self: &Arc<Self>) -> Result {
        let (rtu, tid) = {
            let mut st = self.st.lock();
            if !st.rtu_held || st.conn.state() != State::Established {
                return Err(EINVAL);
            }
            st.rtu_held = false;
            let rtu = Rtu {
                local_comm_id: st.conn.local_comm_id(),
                remote_comm_id: st.conn.remote_comm_id().unwrap_or(st.peer_id),
                ..Rtu::default()
            };
            (rtu, st.tid)
        };
        self.send(&CmMessage::Rtu(rtu), tid, false);
        Ok(())
    }

    /// The active side could not take the REP (its QP would not move):
    /// a REJ to the peer, and the connection ends as if rejected, through
    /// timewait (the state machine is past the REP).
    fn refuse_rep(self: &Arc<Self>) {
        let (ours, acts, tid) = {
            let mut st = self.st.lock();
            let (local, remote) = (
                st.conn.local_comm_id(),
                st.conn.remote_comm_id().unwrap_or(0),
            );
            let ours = Rej {
                local_comm_id: local,
                remote_comm_id: remote,
                message_rejected: MsgResponse::Rep as u8,
                reason: RejReason::ConsumerDefined as u16,
                ..Rej::default()
            };
            let as_theirs = Rej {
                local_comm_id: remote,
                remote_comm_id: local,
                ..ours
            };
            let acts = st.conn.on_rej(&as_theirs, now_ms());
            (ours, acts, st.tid)
        };
        self.send(&CmMessage::Rej(ours), tid, false);
        let _ = self.run_with(acts, Some(&ours));
    }

    /// The CM's timer found this connection's deadline passed.
    pub(crate) fn on_timer(self: &Arc<Self>, now: u64) {
        let acts = {
            let mut st = self.st.lock();
            match st.conn.deadline() {
                Some(d) if d <= now => Some(st.conn.on_timeout(now)),
                _ => None,
            }
        };
        let Some(acts) = acts else {
            // Not due (it changed since the timer took it): the table
            // gets its deadline back.
            self.sync();
            return;
        };
        let _ = self.run(acts);
    }

    fn run(self: &Arc<Self>, acts: Actions) -> Result {
        self.run_with(acts, None)
    }

    /// Carries out `acts`: messages, timer, events (a Rejected event gets
    /// the private data of `rej`).
    fn run_with(self: &Arc<Self>, acts: Actions, rej: Option<&Rej>) -> Result {
        let mut todo = match self.plan(&acts) {
            Ok(t) => t,
            Err(e) => {
                self.sync();
                return Err(e);
            }
        };
        for (msg, tid) in todo.msgs.iter() {
            self.send(msg, *tid, false);
        }
        for (mad, retry) in todo.resend.iter() {
            self.send_raw(mad, *retry);
        }
        self.sync();
        if let Some(u) = todo.user.take() {
            for ev in todo.events.iter_mut() {
                if let (ConnEvent::Rejected { private_data, .. }, Some(r)) = (&mut *ev, rej) {
                    private_data.copy_from_slice(r.private_data.as_ref());
                }
                u.event(self, *ev);
            }
        }
        Ok(())
    }

    /// Builds what `acts` asks for, under the lock.
    fn plan(&self, acts: &Actions) -> Result<Todo> {
        let mut guard = self.st.lock();
        let st = &mut *guard;
        let mut todo = Todo {
            msgs: KVec::new(),
            resend: KVec::new(),
            events: KVec::new(),
            user: st.user.clone(),
        };
        let ids = (
            st.conn.local_comm_id(),
            st.conn.remote_comm_id().unwrap_or(st.peer_id),
        );
        for a in acts.iter() {
            match *a {
                Action::SendReq | Action::SendRep | Action::SendDreq => {
                    let (mad, sent) = match *a {
                        Action::SendReq => (st.req, &mut st.sent[0]),
                        Action::SendRep => (st.rep, &mut st.sent[1]),
                        _ => (st.dreq, &mut st.sent[2]),
                    };
                    if let Some(m) = mad {
                        todo.resend.push((m, *sent), GFP_KERNEL)?;
                        *sent = true;
                    }
                }
                Action::SendRtu => todo.msgs.push(
                    (
                        CmMessage::Rtu(Rtu {
                            local_comm_id: ids.0,
                            remote_comm_id: ids.1,
                            ..Rtu::default()
                        }),
                        st.tid,
                    ),
                    GFP_KERNEL,
                )?,
                Action::SendMra {
                    mraed,
                    service_timeout,
                } => todo.msgs.push(
                    (
                        CmMessage::Mra(Mra {
                            local_comm_id: ids.0,
                            remote_comm_id: ids.1,
                            message_mraed: mraed as u8,
                            service_timeout,
                            ..Mra::default()
                        }),
                        st.their_tid,
                    ),
                    GFP_KERNEL,
                )?,
                Action::SendRej {
                    reason,
                    rejected,
                    private_data_len,
                } => {
                    let n = usize::from(private_data_len).min(REJ_PRIVATE_DATA_LEN);
                    let mut rej = Rej {
                        local_comm_id: ids.0,
                        remote_comm_id: ids.1,
                        message_rejected: rejected as u8,
                        reason: reason as u16,
                        private_data: Bytes::from_slice(&st.rej_data[..n]).unwrap_or_default(),
                        ..Rej::default()
                    };
                    // A TIMEOUT REJ carries our node GUID, by which (with
                    // our ID) the peer finds its end: it may not know our
                    // ID's match yet (`cm_acquire_rejected_id`).
                    if reason == RejReason::Timeout {
                        rej.set_ari_guid(self.port.device().node_guid());
                    }
                    let tid = if st.conn.is_active() {
                        st.tid
                    } else {
                        st.their_tid
                    };
                    todo.msgs.push((CmMessage::Rej(rej), tid), GFP_KERNEL)?;
                }
                Action::SendDrep => todo.msgs.push(
                    (
                        CmMessage::Drep(Drep {
                            local_comm_id: ids.0,
                            remote_comm_id: ids.1,
                            ..Drep::default()
                        }),
                        st.their_tid,
                    ),
                    GFP_KERNEL,
                )?,
                Action::StartTimer { .. } | Action::StopTimer | Action::Drop => {}
                Action::Event(e) => {
                    let ev = match e {
                        Event::Established => Some(ConnEvent::Established),
                        Event::Rejected { reason, .. } => Some(ConnEvent::Rejected {
                            reason,
                            private_data: [0; REJ_PRIVATE_DATA_LEN],
                        }),
                        Event::Unreachable { .. } => Some(ConnEvent::Unreachable),
                        Event::Disconnected { .. } => Some(ConnEvent::Disconnected),
                        Event::TimewaitExit => Some(ConnEvent::TimewaitExit),
                        Event::ReqReceived | Event::MraReceived { .. } => None,
                    };
                    if let Some(ev) = ev {
                        todo.events.push(ev, GFP_KERNEL)?;
                    }
                }
            }
        }
        Ok(todo)
    }

    fn send(&self, msg: &CmMessage, tid: u64, retry: bool) {
        let mut mad = [0u8; MAD_SIZE];
        if msg.write_mad(tid, 0, &mut mad).is_ok() {
            self.send_raw(&mad, retry);
        }
    }

    /// Sends a whole CM MAD, counted as a message or, when it went
    /// before, as a retry.
    fn send_raw(&self, mad: &[u8; MAD_SIZE], retry: bool) {
        let attr = u16::from_be_bytes([mad[16], mad[17]]);
        let group = if retry {
            Group::TxRetries
        } else {
            Group::TxMsgs
        };
        // Counted before it goes: the answer to it can come back first.
        self.port.counters.count(group, attr);
        if let Some(agent) = self.port.agent() {
            let _ = agent.send(&self.addr, mad, SendOpts::default());
        }
    }
}
