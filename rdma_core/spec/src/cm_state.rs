// SPDX-License-Identifier: GPL-2.0

//! The per-connection state machine of the InfiniBand connection manager
//! (IBA volume 1 chapter 12), as sans-IO logic that behaves like the
//! Linux 6.12 `drivers/infiniband/core/cm.c` for one `ib_cm_id`.
//!
//! A [`Conn`] is one end of one connection. Every input (a received
//! message, a consumer request, a timer firing) is a method that takes the
//! caller's clock `now` in milliseconds and returns [`Actions`]: a short,
//! fixed-capacity list of what to do, in order: messages to send, the
//! connection's single timer to (re)arm or stop, and events to deliver to
//! the consumer ([`Action::Event`]). An input that is not legal in the
//! current state, or a message that is not for this connection, returns
//! just [`Action::Drop`] and changes nothing. Nothing panics, whatever the
//! input.
//!
//! The caller builds and sends the messages (see [`super::cm_msg`]): an
//! `Action::Send*` names the message and the values only the state machine
//! knows (reasons, the message an MRA or REJ refers to). Resends after a
//! timeout reuse the bytes and transaction ID of the first send, as the MAD
//! layer does; answers to a duplicate (an RTU for a duplicate REP, a DREP
//! for a duplicate DREQ, an MRA or a stale-connection REJ for a duplicate
//! REQ) are sent with the transaction ID of the duplicate.
//!
//! # States
//!
//! | state          | side    | meaning                                              |
//! | -------------- | ------- | ---------------------------------------------------- |
//! | `Idle`         | both    | no connection: the start, and the end after a REJ, a timeout or timewait |
//! | `ReqSent`      | active  | REQ sent, waiting for REP/REJ/MRA                     |
//! | `MraReqRcvd`   | active  | the peer MRA'd the REQ: waiting longer               |
//! | `ReqRcvd`      | passive | REQ delivered to the consumer, who has not answered  |
//! | `MraReqSent`   | passive | the consumer asked for more time (MRA)               |
//! | `RepSent`      | passive | REP sent, waiting for the RTU                        |
//! | `MraRepRcvd`   | passive | the peer MRA'd the REP: waiting longer               |
//! | `Established`  | both    | connected                                            |
//! | `DreqSent`     | both    | DREQ sent, waiting for the DREP                      |
//! | `TimeWait`     | both    | disconnected; waiting before the QP may be reused    |
//!
//! Two states of the C are collapsed, as rdma_cm uses them:
//!
//! - `IB_CM_REP_RCVD` (and `IB_CM_MRA_REP_SENT`): the active side sends the
//!   RTU as soon as the REP arrives and is `Established` at once. The C CM
//!   gives the consumer the REP first; rdma_cm then moves the QP to RTS and
//!   sends the RTU right away. Rejecting a REP, or MRA'ing it, is therefore
//!   not offered.
//! - `IB_CM_DREQ_RCVD`: a DREQ is answered by a DREP at once (rdma_cm calls
//!   `ib_send_cm_drep` from its DREQ handler) and the connection enters
//!   `TimeWait`.
//!
//! # Transitions
//!
//! | state                    | input                      | next          | actions |
//! | ------------------------ | -------------------------- | ------------- | ------- |
//! | Idle                     | [`Conn::connect`]          | ReqSent       | SendReq, StartTimer |
//! | Idle                     | [`Conn::on_req`]           | ReqRcvd       | ReqReceived |
//! | ReqSent, MraReqRcvd      | [`Conn::on_rep`]           | Established   | StopTimer, SendRtu, Established |
//! | ReqSent                  | [`Conn::on_mra`] (of REQ)  | MraReqRcvd    | StartTimer, MraReceived |
//! | ReqSent, MraReqRcvd      | [`Conn::on_timeout`]       | same / Idle   | SendReq, StartTimer; after the last retry Unreachable(Req) |
//! | ReqRcvd                  | [`Conn::send_mra`]         | MraReqSent    | SendMra (unless delayed) |
//! | ReqRcvd, MraReqSent      | [`Conn::accept`]           | RepSent       | SendRep, StartTimer |
//! | MraReqSent               | duplicate REQ              | MraReqSent    | SendMra |
//! | RepSent                  | [`Conn::on_mra`] (of REP)  | MraRepRcvd    | StartTimer, MraReceived |
//! | RepSent, MraRepRcvd      | [`Conn::on_rtu`], [`Conn::established`] | Established | StopTimer, Established |
//! | RepSent, MraRepRcvd      | [`Conn::on_timeout`]       | same / Idle   | SendRep, StartTimer; after the last retry Unreachable(Rep) |
//! | ReqSent .. MraRepRcvd    | [`Conn::on_rej`]           | Idle (TimeWait if stale) | Rejected |
//! | ReqSent, MraReqRcvd, ReqRcvd, MraReqSent | [`Conn::reject`] | Idle | SendRej |
//! | RepSent, MraRepRcvd      | [`Conn::reject`]           | TimeWait      | SendRej, StartTimer |
//! | Established              | duplicate REP              | Established   | SendRtu |
//! | Established              | [`Conn::disconnect`]       | DreqSent      | SendDreq, StartTimer |
//! | RepSent, MraRepRcvd, Established, DreqSent | [`Conn::on_dreq`] | TimeWait | SendDrep, StartTimer, Disconnected |
//! | DreqSent                 | [`Conn::on_drep`]          | TimeWait      | StartTimer, Disconnected |
//! | DreqSent                 | [`Conn::on_timeout`]       | same / TimeWait | SendDreq, StartTimer; after the last retry StartTimer, Disconnected { timed_out } |
//! | Established, DreqSent    | [`Conn::on_rej`]           | TimeWait      | StartTimer, Rejected |
//! | TimeWait                 | duplicate DREQ             | TimeWait      | SendDrep |
//! | TimeWait                 | duplicate REQ              | TimeWait      | SendRej(StaleConn) |
//! | TimeWait                 | [`Conn::on_timeout`], [`Conn::on_timewait_expired`] | Idle | TimewaitExit |
//!
//! Everything else is [`Action::Drop`]. In particular, as in the C
//! (`cm_dup_req_handler`), a duplicate REQ in `ReqRcvd` or `RepSent` is
//! dropped: the REP is resent by its own timer, and an MRA goes out only
//! once the consumer asked for one. rdma_cm asks for a *delayed* MRA
//! (`CMA_CM_MRA_SETTING`, service timeout 24) whenever its consumer does not
//! accept from within the REQ event; `send_mra(now, 24, true)` reproduces
//! that, after which a duplicate REQ is answered by an MRA. A DREP, RTU or
//! MRA that comes again is dropped (counted as a duplicate by the C).
//!
//! As in the C (`cm_process_send_error`), a REQ or REP that gets no answer
//! after its retries returns the connection to `Idle` with an
//! [`Event::Unreachable`] (`IB_CM_REQ_ERROR` / `IB_CM_REP_ERROR`, which
//! rdma_cm reports as `RDMA_CM_EVENT_UNREACHABLE`, `-ETIMEDOUT`); no REJ is
//! sent. A DREQ without a DREP enters `TimeWait` anyway, with
//! `Event::Disconnected { timed_out: true }` (`IB_CM_DREQ_ERROR`).
//!
//! # Timers
//!
//! IBA times are `4.096 us * 2^n`; the C approximates them as
//! `1 << max(n - 8, 0)` ms ([`iba_time_to_ms`]). As in the C:
//!
//! - the active side waits `2 * ms(packet life time) + ms(remote CM
//!   response timeout)` for the answer to its REQ and to its DREQ;
//! - the passive side waits `ms(local CM response timeout of the REQ)` for
//!   the answer to its REP and to its DREQ;
//! - both resend up to the REQ's Max CM Retries times;
//! - an MRA makes the wait, from its arrival and for every later retry,
//!   `ms(MRA service timeout) + ms(ack timeout)`;
//! - timewait lasts `ms(ack timeout)`, where the ack timeout is
//!   `packet life time + 1` on the active side until the REP, then
//!   `cm_ack_timeout(REP target ACK delay, packet life time)`
//!   ([`ack_timeout`]); on the passive side it is the REQ's primary local
//!   ACK timeout (at least 1). For rxe through rdma_cm (packet life time 16,
//!   CA ACK delay 15) that is `1 << 9` = 512 ms.
//!
//! The connection has one timer: [`Action::StartTimer`] (re)arms it at an
//! absolute deadline, [`Action::StopTimer`] stops it, and the caller calls
//! [`Conn::on_timeout`] when it fires (early calls are dropped).
//!
//! # Not implemented
//!
//! SIDR (service ID resolution), LAP/APR and alternate paths (path
//! migration), the listen side (matching a REQ to a listener and its
//! service ID, and to an existing connection by communication ID: the
//! caller routes messages to a `Conn`; the `Conn` only checks that the
//! communication IDs and QPN in a message are its own), stale-connection
//! detection across connections (REJ or DREQ for a QPN already in use),
//! the consumer rejecting or MRA'ing a REP, and `ib_destroy_cm_id`'s
//! implicit REJ or DREQ (the caller can call [`Conn::reject`] or
//! [`Conn::disconnect`] itself). Failures to send are the caller's: the C
//! treats them as a timeout.
//!
//! This module uses only `core` and its sibling [`super::cm_msg`].

use super::cm_msg::{
    CmMessage, Drep, Dreq, Mra, MsgResponse, Rej, RejReason, Rep, Req, Rtu, REJ_PRIVATE_DATA_LEN,
};

/// The largest IBA time exponent (5-bit fields); larger values are clamped.
const IBA_TIME_MAX: u8 = 31;

/// Milliseconds for an IBA time `4.096 us * 2^t`, as the C's
/// `cm_convert_to_ms`: `1 << max(t - 8, 0)`. `t` above 31 counts as 31.
pub const fn iba_time_to_ms(t: u8) -> u64 {
    let t = if t > IBA_TIME_MAX { IBA_TIME_MAX } else { t };
    1u64 << t.saturating_sub(8)
}

/// The QP ACK timeout for a CA ACK delay and a packet life time, as the C's
/// `cm_ack_timeout`: roughly `ack_delay + 2 * life_time` in IBA time,
/// `max(ack_delay, life_time + 1)` rounded up by one when the other is
/// within a factor of two; at most 31.
pub const fn ack_timeout(ca_ack_delay: u8, packet_life_time: u8) -> u8 {
    let delay = ca_ack_delay as u16;
    let mut t = packet_life_time as u16 + 1;
    if t >= delay {
        if delay + 1 >= t {
            t += 1;
        }
    } else if t + 1 >= delay {
        t = delay + 1;
    } else {
        t = delay;
    }
    if t > IBA_TIME_MAX as u16 {
        IBA_TIME_MAX
    } else {
        t as u8
    }
}

/// A connection end's state (`enum ib_cm_state`, less the listen, SIDR and
/// the two collapsed states: see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// No connection.
    Idle,
    /// Active: REQ sent.
    ReqSent,
    /// Active: the peer MRA'd the REQ.
    MraReqRcvd,
    /// Passive: REQ given to the consumer.
    ReqRcvd,
    /// Passive: the consumer MRA'd the REQ.
    MraReqSent,
    /// Passive: REP sent.
    RepSent,
    /// Passive: the peer MRA'd the REP.
    MraRepRcvd,
    /// Connected.
    Established,
    /// DREQ sent.
    DreqSent,
    /// Disconnected, waiting out the timewait.
    TimeWait,
}

impl State {
    /// Every state.
    pub const ALL: [State; 10] = [
        State::Idle,
        State::ReqSent,
        State::MraReqRcvd,
        State::ReqRcvd,
        State::MraReqSent,
        State::RepSent,
        State::MraRepRcvd,
        State::Established,
        State::DreqSent,
        State::TimeWait,
    ];
}

/// What the consumer is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// Passive: a REQ arrived (`IB_CM_REQ_RECEIVED`); answer it with
    /// [`Conn::accept`], [`Conn::reject`] or [`Conn::send_mra`].
    ReqReceived,
    /// The peer asked for more time (`IB_CM_MRA_RECEIVED`).
    MraReceived {
        /// The MRA's service timeout (IBA time).
        service_timeout: u8,
    },
    /// The connection is established (`IB_CM_RTU_RECEIVED`, or the active
    /// side after sending the RTU, or `IB_CM_USER_ESTABLISHED`).
    Established,
    /// The peer rejected the connection (`IB_CM_REJ_RECEIVED`).
    Rejected {
        /// The REJ's reason (raw: it may be none of [`RejReason`]).
        reason: u16,
        /// Length of the REJ's additional rejection information.
        ari_len: u8,
        /// Length of the private data given with the event (all of the
        /// REJ's, as the C gives it).
        private_data_len: u8,
    },
    /// No answer to the REQ or REP after the last retry
    /// (`IB_CM_REQ_ERROR`, `IB_CM_REP_ERROR`).
    Unreachable {
        /// Which message went unanswered.
        msg: MsgResponse,
    },
    /// The connection is disconnected (`IB_CM_DREQ_RECEIVED`,
    /// `IB_CM_DREP_RECEIVED`, `IB_CM_DREQ_ERROR`).
    Disconnected {
        /// Whether our DREQ went unanswered.
        timed_out: bool,
    },
    /// Timewait is over (`IB_CM_TIMEWAIT_EXIT`): the QP may be reused.
    TimewaitExit,
}

/// One thing for the caller to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Send (or resend) the REQ.
    SendReq,
    /// Send (or resend) the REP.
    SendRep,
    /// Send the RTU.
    SendRtu,
    /// Send an MRA.
    SendMra {
        /// The message acknowledged.
        mraed: MsgResponse,
        /// The service timeout to put in it (IBA time, 5 bits).
        service_timeout: u8,
    },
    /// Send a REJ.
    SendRej {
        /// The reason.
        reason: RejReason,
        /// The message rejected.
        rejected: MsgResponse,
        /// Bytes of private data to put in it.
        private_data_len: u8,
    },
    /// Send (or resend) the DREQ.
    SendDreq,
    /// Send the DREP.
    SendDrep,
    /// Arm the connection's timer for `deadline` (ms), replacing any
    /// earlier deadline.
    StartTimer {
        /// When to call [`Conn::on_timeout`].
        deadline: u64,
    },
    /// Stop the connection's timer.
    StopTimer,
    /// Deliver an event to the consumer.
    Event(Event),
    /// The input is not legal in this state or not for this connection;
    /// nothing changed.
    Drop,
}

/// Room in an [`Actions`] list: no input produces more.
pub const ACTIONS_CAP: usize = 4;

/// The actions one input produces, in order.
#[derive(Clone, Copy, Debug)]
pub struct Actions {
    items: [Action; ACTIONS_CAP],
    len: usize,
}

impl Actions {
    const fn new() -> Actions {
        Actions {
            items: [Action::Drop; ACTIONS_CAP],
            len: 0,
        }
    }

    fn drop_input() -> Actions {
        let mut a = Actions::new();
        a.push(Action::Drop);
        a
    }

    /// Appends `a`; beyond the capacity it is lost (no input needs that).
    fn push(&mut self, a: Action) {
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = a;
            self.len += 1;
        }
    }

    /// The actions.
    pub fn as_slice(&self) -> &[Action] {
        self.items.get(..self.len).unwrap_or(&[])
    }

    /// An iterator over the actions.
    pub fn iter(&self) -> core::slice::Iter<'_, Action> {
        self.as_slice().iter()
    }

    /// How many actions there are.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Whether there are none (only a delayed MRA produces no action).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the input was dropped.
    pub fn is_drop(&self) -> bool {
        self.as_slice() == [Action::Drop]
    }

    /// Whether `a` is among the actions.
    pub fn contains(&self, a: &Action) -> bool {
        self.as_slice().contains(a)
    }

    /// The actions without those `drop` picks, in order (a user that
    /// answers a REP later takes the RTU and its event out).
    pub fn without(&self, drop: impl Fn(&Action) -> bool) -> Actions {
        let mut out = Actions::new();
        for a in self.iter().filter(|a| !drop(a)) {
            out.push(*a);
        }
        out
    }

    /// The events among the actions.
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        self.iter().filter_map(|a| match a {
            Action::Event(e) => Some(*e),
            _ => None,
        })
    }
}

impl PartialEq for Actions {
    fn eq(&self, other: &Actions) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Actions {}

impl<'a> IntoIterator for &'a Actions {
    type Item = &'a Action;
    type IntoIter = core::slice::Iter<'a, Action>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// What the active side needs to start a connection (`struct
/// ib_cm_req_param`): the values of the REQ it sends and of its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectParams {
    /// Our QPN (the REQ's local QPN), checked in a DREQ.
    pub local_qpn: u32,
    /// The primary path's packet life time (IBA time).
    pub packet_life_time: u8,
    /// The REQ's remote CM response timeout (IBA time).
    pub remote_cm_response_timeout: u8,
    /// The REQ's Max CM Retries (4 bits; more counts as 15).
    pub max_cm_retries: u8,
}

impl ConnectParams {
    /// The parameters of REQ `req`, sent over a path with packet life time
    /// `packet_life_time`.
    pub const fn from_req(req: &Req, packet_life_time: u8) -> ConnectParams {
        ConnectParams {
            local_qpn: req.local_qpn,
            packet_life_time,
            remote_cm_response_timeout: req.remote_cm_response_timeout,
            max_cm_retries: req.max_cm_retries,
        }
    }
}

/// What the passive side needs to accept (`struct ib_cm_rep_param`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcceptParams {
    /// Our QPN (the REP's local QPN), checked in a DREQ.
    pub local_qpn: u32,
}

/// The most retries a REQ can ask for (a 4-bit field).
const MAX_CM_RETRIES: u8 = 15;

/// The timer of an outstanding message: when it fires, how long each wait
/// is, and how many resends remain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Timer {
    deadline: u64,
    timeout_ms: u64,
    retries_left: u8,
}

/// One end of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conn {
    state: State,
    active: bool,
    local_comm_id: u32,
    remote_comm_id: Option<u32>,
    local_qpn: Option<u32>,
    remote_qpn: Option<u32>,
    /// The wait for an answer to our REQ/REP/DREQ (`timeout_ms`).
    timeout_ms: u64,
    /// Max CM retries.
    retries: u8,
    /// The ack timeout (IBA time) used for MRAs and timewait (`av.timeout`).
    ack_timeout: u8,
    /// The active side's packet life time, for the ack timeout after REP.
    packet_life_time: u8,
    /// Service timeout of our MRA, resent on a duplicate REQ.
    mra_service_timeout: u8,
    timer: Option<Timer>,
}

impl Conn {
    /// An idle connection end whose communication ID is `local_comm_id`.
    pub const fn new(local_comm_id: u32) -> Conn {
        Conn {
            state: State::Idle,
            active: false,
            local_comm_id,
            remote_comm_id: None,
            local_qpn: None,
            remote_qpn: None,
            timeout_ms: 0,
            retries: 0,
            ack_timeout: 0,
            packet_life_time: 0,
            mra_service_timeout: 0,
            timer: None,
        }
    }

    /// The state.
    pub const fn state(&self) -> State {
        self.state
    }

    /// Whether this end started the connection (sent the REQ).
    pub const fn is_active(&self) -> bool {
        self.active
    }

    /// Our communication ID.
    pub const fn local_comm_id(&self) -> u32 {
        self.local_comm_id
    }

    /// The peer's communication ID, once known.
    pub const fn remote_comm_id(&self) -> Option<u32> {
        self.remote_comm_id
    }

    /// The peer's QPN, once known.
    pub const fn remote_qpn(&self) -> Option<u32> {
        self.remote_qpn
    }

    /// When the timer fires, if it runs.
    pub fn deadline(&self) -> Option<u64> {
        self.timer.map(|t| t.deadline)
    }

    /// How long timewait lasts (ms), with what is known now.
    pub const fn timewait_ms(&self) -> u64 {
        iba_time_to_ms(self.ack_timeout)
    }

    fn reset_to_idle(&mut self) {
        *self = Conn::new(self.local_comm_id);
    }

    /// Arms the timer for an outstanding message with all its retries.
    fn arm(&mut self, now: u64, out: &mut Actions) {
        let deadline = now.saturating_add(self.timeout_ms);
        self.timer = Some(Timer {
            deadline,
            timeout_ms: self.timeout_ms,
            retries_left: self.retries,
        });
        out.push(Action::StartTimer { deadline });
    }

    fn stop_timer(&mut self, out: &mut Actions) {
        if self.timer.take().is_some() {
            out.push(Action::StopTimer);
        }
    }

    /// Enters timewait (`cm_enter_timewait`), replacing any timer.
    fn enter_timewait(&mut self, now: u64, out: &mut Actions) {
        self.state = State::TimeWait;
        let deadline = now.saturating_add(self.timewait_ms());
        self.timer = Some(Timer {
            deadline,
            timeout_ms: 0,
            retries_left: 0,
        });
        out.push(Action::StartTimer { deadline });
    }

    /// Whether a message from the peer with these communication IDs is
    /// for us: its remote ID is ours and its local ID the peer's.
    fn ours(&self, local_comm_id: u32, remote_comm_id: u32) -> bool {
        remote_comm_id == self.local_comm_id && self.remote_comm_id == Some(local_comm_id)
    }

    /// The C CM's lookup of a connection by our ID `ours` and the peer's
    /// `theirs` (`cm_acquire_id`): both must be the connection's, a peer
    /// ID not yet known counting as 0.
    fn acquire(&self, ours: u32, theirs: u32) -> bool {
        ours == self.local_comm_id && self.remote_comm_id.unwrap_or(0) == theirs
    }

    /// Whether `msg`, which names our communication ID as its remote one,
    /// is this connection's by the rules the C CM finds a connection for
    /// each message with: a REP by our ID alone while the peer's is not
    /// known (`cm_rep_handler`), else by both (`cm_dup_rep_handler`); a
    /// REJ of a REQ, or an MRA of one, by our ID alone while the peer's is
    /// not known (`cm_acquire_rejected_id`, `cm_acquire_mraed_id`); every
    /// other by both IDs. A REQ is found by the peer's ID and node by the
    /// caller, and is always taken. A message that is not the
    /// connection's must be handled as if no connection had our ID (the
    /// C's lookup fails): it must not reach the state machine.
    pub fn takes(&self, msg: &CmMessage) -> bool {
        match msg {
            CmMessage::Req(_) => true,
            CmMessage::Rep(m) => {
                self.acquire(m.remote_comm_id, 0) || self.acquire(m.remote_comm_id, m.local_comm_id)
            }
            // A TIMEOUT REJ (its sender gave up on us, maybe before it knew
            // our ID) is found by the sender's ID and node (the GUID in
            // its ARI), as `cm_acquire_rejected_id` does: the caller found
            // this connection so; its peer's ID must be the sender's.
            CmMessage::Rej(m) if m.reason == RejReason::Timeout as u16 => {
                self.remote_comm_id == Some(m.local_comm_id)
            }
            CmMessage::Rej(m) => match m.rejected() {
                Some(MsgResponse::Req) => self.acquire(m.remote_comm_id, 0),
                _ => self.acquire(m.remote_comm_id, m.local_comm_id),
            },
            CmMessage::Mra(m) => match m.mraed() {
                Some(MsgResponse::Req) => self.acquire(m.remote_comm_id, 0),
                Some(_) => self.acquire(m.remote_comm_id, m.local_comm_id),
                None => false,
            },
            CmMessage::Rtu(m) => self.acquire(m.remote_comm_id, m.local_comm_id),
            CmMessage::Dreq(m) => self.acquire(m.remote_comm_id, m.local_comm_id),
            CmMessage::Drep(m) => self.acquire(m.remote_comm_id, m.local_comm_id),
        }
    }

    /// Whether `msg`, taken by this connection ([`Conn::takes`]) and
    /// dropped by the state machine in the present state, is one the C CM
    /// counts as a duplicate (`cm_rx_duplicates`): any REQ or REP, an RTU
    /// (it only ever drops one in a state the RTU does not lead from), an
    /// MRA once one was received. Every other dropped message (a DREQ
    /// whose QPN is not ours, a REJ, DREP or MRA the state does not take)
    /// the C drops without counting it.
    pub fn dropped_as_duplicate(&self, msg: &CmMessage) -> bool {
        match msg {
            CmMessage::Req(_) | CmMessage::Rep(_) | CmMessage::Rtu(_) => true,
            CmMessage::Mra(_) => matches!(self.state, State::MraReqRcvd | State::MraRepRcvd),
            _ => false,
        }
    }

    // -----------------------------------------------------------------
    // Active side

    /// Active: starts connecting (`ib_send_cm_req`): legal in `Idle`.
    pub fn connect(&mut self, now: u64, params: ConnectParams) -> Actions {
        if self.state != State::Idle {
            return Actions::drop_input();
        }
        self.reset_to_idle();
        self.active = true;
        self.local_qpn = Some(params.local_qpn);
        self.packet_life_time = params.packet_life_time.min(IBA_TIME_MAX);
        self.timeout_ms = iba_time_to_ms(params.packet_life_time)
            .saturating_mul(2)
            .saturating_add(iba_time_to_ms(params.remote_cm_response_timeout));
        self.retries = params.max_cm_retries.min(MAX_CM_RETRIES);
        // cm_init_av_by_path: av.timeout = packet life time + 1.
        self.ack_timeout = (self.packet_life_time + 1).min(IBA_TIME_MAX);
        self.state = State::ReqSent;
        let mut out = Actions::new();
        out.push(Action::SendReq);
        self.arm(now, &mut out);
        out
    }

    /// Active: a REP arrived (`cm_rep_handler`, then the RTU at once). In
    /// `Established` a duplicate of it is answered with the RTU again.
    pub fn on_rep(&mut self, rep: &Rep, _now: u64) -> Actions {
        let mut out = Actions::new();
        match self.state {
            State::ReqSent | State::MraReqRcvd if rep.remote_comm_id == self.local_comm_id => {
                self.remote_comm_id = Some(rep.local_comm_id);
                self.remote_qpn = Some(rep.local_qpn);
                self.ack_timeout = ack_timeout(rep.target_ack_delay, self.packet_life_time);
                self.state = State::Established;
                self.stop_timer(&mut out);
                out.push(Action::SendRtu);
                out.push(Action::Event(Event::Established));
            }
            State::Established if self.ours(rep.local_comm_id, rep.remote_comm_id) => {
                out.push(Action::SendRtu);
            }
            _ => out.push(Action::Drop),
        }
        out
    }

    // -----------------------------------------------------------------
    // Passive side

    /// Passive: a REQ arrived (`cm_req_handler`). In `Idle` it starts a
    /// connection; a duplicate (same peer communication ID) is answered
    /// as `cm_dup_req_handler` does: the MRA again in `MraReqSent`, a REJ
    /// with reason stale connection in `TimeWait`, nothing otherwise.
    pub fn on_req(&mut self, req: &Req, _now: u64) -> Actions {
        let mut out = Actions::new();
        if self.state == State::Idle {
            self.reset_to_idle();
            self.remote_comm_id = Some(req.local_comm_id);
            self.remote_qpn = Some(req.local_qpn);
            self.timeout_ms = iba_time_to_ms(req.local_cm_response_timeout);
            self.retries = req.max_cm_retries.min(MAX_CM_RETRIES);
            // cm_format_paths_from_req and cm_init_av_by_path: the path's
            // packet life time is the local ACK timeout less one, and
            // av.timeout that plus one.
            let lat = req.primary_path.local_ack_timeout.min(IBA_TIME_MAX);
            self.ack_timeout = lat.max(1);
            self.state = State::ReqRcvd;
            out.push(Action::Event(Event::ReqReceived));
            return out;
        }
        if self.remote_comm_id != Some(req.local_comm_id) {
            out.push(Action::Drop);
            return out;
        }
        match self.state {
            State::MraReqSent => out.push(Action::SendMra {
                mraed: MsgResponse::Req,
                service_timeout: self.mra_service_timeout,
            }),
            State::TimeWait => out.push(Action::SendRej {
                reason: RejReason::StaleConn,
                rejected: MsgResponse::Other,
                private_data_len: 0,
            }),
            _ => out.push(Action::Drop),
        }
        out
    }

    /// Passive: the consumer asks for more time to answer the REQ
    /// (`ib_send_cm_mra`): legal in `ReqRcvd`. The MRA carries
    /// `service_timeout` (IBA time, 5 bits: higher bits are dropped, as
    /// the C's `IBA_SET` does); with `delay` it is not sent now but only
    /// in answer to a duplicate REQ (`IB_CM_MRA_FLAG_DELAY`, as rdma_cm
    /// uses it).
    pub fn send_mra(&mut self, _now: u64, service_timeout: u8, delay: bool) -> Actions {
        let mut out = Actions::new();
        if self.state != State::ReqRcvd {
            out.push(Action::Drop);
            return out;
        }
        self.mra_service_timeout = service_timeout & 0x1f;
        self.state = State::MraReqSent;
        if delay {
            // Nothing to send now; the state change is the effect.
            return out;
        }
        out.push(Action::SendMra {
            mraed: MsgResponse::Req,
            service_timeout: self.mra_service_timeout,
        });
        out
    }

    /// Passive: the consumer accepts (`ib_send_cm_rep`): legal in
    /// `ReqRcvd` and `MraReqSent`.
    pub fn accept(&mut self, now: u64, params: AcceptParams) -> Actions {
        let mut out = Actions::new();
        match self.state {
            State::ReqRcvd | State::MraReqSent => {
                self.local_qpn = Some(params.local_qpn);
                self.state = State::RepSent;
                out.push(Action::SendRep);
                self.arm(now, &mut out);
            }
            _ => out.push(Action::Drop),
        }
        out
    }

    /// Passive: the RTU arrived (`cm_rtu_handler`).
    pub fn on_rtu(&mut self, rtu: &Rtu, _now: u64) -> Actions {
        let mut out = Actions::new();
        match self.state {
            State::RepSent | State::MraRepRcvd
                if self.ours(rtu.local_comm_id, rtu.remote_comm_id) =>
            {
                self.state = State::Established;
                self.stop_timer(&mut out);
                out.push(Action::Event(Event::Established));
            }
            _ => out.push(Action::Drop),
        }
        out
    }

    /// Passive: traffic arrived on the QP before the RTU (the consumer's
    /// `ib_cm_notify(IB_EVENT_COMM_EST)`): established as if the RTU had
    /// come.
    pub fn established(&mut self, _now: u64) -> Actions {
        let mut out = Actions::new();
        match self.state {
            State::RepSent | State::MraRepRcvd => {
                self.state = State::Established;
                self.stop_timer(&mut out);
                out.push(Action::Event(Event::Established));
            }
            _ => out.push(Action::Drop),
        }
        out
    }

    // -----------------------------------------------------------------
    // Both sides

    /// The consumer rejects (`ib_send_cm_rej`) with `reason` and
    /// `private_data_len` bytes of private data (at most
    /// [`REJ_PRIVATE_DATA_LEN`]): legal before the connection is
    /// established. The active side gives up its REQ; the passive side
    /// rejects the REQ, or, once its REP is out, the connection, and then
    /// enters timewait.
    pub fn reject(&mut self, now: u64, reason: RejReason, private_data_len: u8) -> Actions {
        let mut out = Actions::new();
        if usize::from(private_data_len) > REJ_PRIVATE_DATA_LEN {
            out.push(Action::Drop);
            return out;
        }
        let rejected = match self.state {
            State::ReqRcvd | State::MraReqSent => MsgResponse::Req,
            State::ReqSent | State::MraReqRcvd | State::RepSent | State::MraRepRcvd => {
                MsgResponse::Other
            }
            _ => {
                out.push(Action::Drop);
                return out;
            }
        };
        out.push(Action::SendRej {
            reason,
            rejected,
            private_data_len,
        });
        match self.state {
            State::RepSent | State::MraRepRcvd => self.enter_timewait(now, &mut out),
            _ => {
                self.stop_timer(&mut out);
                self.reset_to_idle();
            }
        }
        out
    }

    /// A REJ arrived (`cm_rej_handler`). Before the connection is
    /// established it ends the attempt (in timewait if the reason is a
    /// stale connection, else back to `Idle`); once established or while
    /// disconnecting, it ends the connection in timewait.
    pub fn on_rej(&mut self, rej: &Rej, now: u64) -> Actions {
        let mut out = Actions::new();
        // cm_acquire_rejected_id: a REJ of our REQ is matched on our ID
        // alone, and only while the peer's is not known; any other on
        // both (so a REJ "of the REQ" cannot end a connection whose peer
        // is known, whatever its IDs).
        if !self.takes(&CmMessage::Rej(*rej)) {
            out.push(Action::Drop);
            return out;
        }
        let event = Action::Event(Event::Rejected {
            reason: rej.reason,
            ari_len: rej.reject_info_length,
            private_data_len: REJ_PRIVATE_DATA_LEN as u8,
        });
        match self.state {
            State::ReqSent
            | State::MraReqRcvd
            | State::RepSent
            | State::MraRepRcvd
            | State::ReqRcvd
            | State::MraReqSent => {
                if rej.reason == RejReason::StaleConn as u16 {
                    self.enter_timewait(now, &mut out);
                } else {
                    self.stop_timer(&mut out);
                    self.reset_to_idle();
                }
            }
            State::Established | State::DreqSent => self.enter_timewait(now, &mut out),
            State::Idle | State::TimeWait => {
                out.push(Action::Drop);
                return out;
            }
        }
        out.push(event);
        out
    }

    /// An MRA arrived (`cm_mra_handler`): the peer needs more time for our
    /// REQ (in `ReqSent`) or REP (in `RepSent`). The wait for the answer
    /// becomes, from now and for the retries left, the MRA's service
    /// timeout plus the ack timeout.
    pub fn on_mra(&mut self, mra: &Mra, now: u64) -> Actions {
        let mut out = Actions::new();
        let next = match (self.state, mra.mraed()) {
            (State::ReqSent, Some(MsgResponse::Req))
                if mra.remote_comm_id == self.local_comm_id =>
            {
                State::MraReqRcvd
            }
            (State::RepSent, Some(MsgResponse::Rep))
                if self.ours(mra.local_comm_id, mra.remote_comm_id) =>
            {
                State::MraRepRcvd
            }
            _ => {
                out.push(Action::Drop);
                return out;
            }
        };
        let Some(timer) = self.timer.as_mut() else {
            out.push(Action::Drop);
            return out;
        };
        let wait =
            iba_time_to_ms(mra.service_timeout).saturating_add(iba_time_to_ms(self.ack_timeout));
        timer.timeout_ms = wait;
        timer.deadline = now.saturating_add(wait);
        let deadline = timer.deadline;
        self.state = next;
        out.push(Action::StartTimer { deadline });
        out.push(Action::Event(Event::MraReceived {
            service_timeout: mra.service_timeout,
        }));
        out
    }

    /// The consumer disconnects (`ib_send_cm_dreq`): legal in
    /// `Established`.
    pub fn disconnect(&mut self, now: u64) -> Actions {
        let mut out = Actions::new();
        if self.state != State::Established {
            out.push(Action::Drop);
            return out;
        }
        self.state = State::DreqSent;
        out.push(Action::SendDreq);
        self.arm(now, &mut out);
        out
    }

    /// A DREQ arrived (`cm_dreq_handler`, then the DREP at once): the
    /// connection is over and enters timewait. In `TimeWait` a duplicate is
    /// answered with the DREP again.
    pub fn on_dreq(&mut self, dreq: &Dreq, now: u64) -> Actions {
        let mut out = Actions::new();
        if !self.ours(dreq.local_comm_id, dreq.remote_comm_id)
            || self.local_qpn != Some(dreq.remote_qpn_eecn)
        {
            out.push(Action::Drop);
            return out;
        }
        match self.state {
            State::RepSent | State::MraRepRcvd | State::Established | State::DreqSent => {
                out.push(Action::SendDrep);
                self.enter_timewait(now, &mut out);
                out.push(Action::Event(Event::Disconnected { timed_out: false }));
            }
            State::TimeWait => out.push(Action::SendDrep),
            _ => out.push(Action::Drop),
        }
        out
    }

    /// A DREP arrived (`cm_drep_handler`): our DREQ is answered.
    pub fn on_drep(&mut self, drep: &Drep, now: u64) -> Actions {
        let mut out = Actions::new();
        if self.state == State::DreqSent && self.ours(drep.local_comm_id, drep.remote_comm_id) {
            self.enter_timewait(now, &mut out);
            out.push(Action::Event(Event::Disconnected { timed_out: false }));
        } else {
            out.push(Action::Drop);
        }
        out
    }

    /// The timer fired. Before the deadline this is dropped. Waiting for
    /// an answer, the message is resent while retries remain; after the
    /// last one the REQ or REP fails (back to `Idle`, `Unreachable`) and a
    /// DREQ gives up (timewait, `Disconnected { timed_out: true }`). In
    /// `TimeWait` the timewait is over.
    pub fn on_timeout(&mut self, now: u64) -> Actions {
        let mut out = Actions::new();
        let Some(timer) = self.timer else {
            out.push(Action::Drop);
            return out;
        };
        if now < timer.deadline {
            out.push(Action::Drop);
            return out;
        }
        let resend = match self.state {
            State::ReqSent | State::MraReqRcvd => Action::SendReq,
            State::RepSent | State::MraRepRcvd => Action::SendRep,
            State::DreqSent => Action::SendDreq,
            State::TimeWait => {
                // The timer has fired: nothing to stop.
                self.timer = None;
                return self.on_timewait_expired(now);
            }
            _ => {
                out.push(Action::Drop);
                return out;
            }
        };
        if timer.retries_left > 0 {
            let deadline = now.saturating_add(timer.timeout_ms);
            self.timer = Some(Timer {
                deadline,
                timeout_ms: timer.timeout_ms,
                retries_left: timer.retries_left - 1,
            });
            out.push(resend);
            out.push(Action::StartTimer { deadline });
            return out;
        }
        match self.state {
            State::DreqSent => {
                self.enter_timewait(now, &mut out);
                out.push(Action::Event(Event::Disconnected { timed_out: true }));
            }
            State::RepSent | State::MraRepRcvd => {
                self.reset_to_idle();
                out.push(Action::Event(Event::Unreachable {
                    msg: MsgResponse::Rep,
                }));
            }
            _ => {
                self.reset_to_idle();
                out.push(Action::Event(Event::Unreachable {
                    msg: MsgResponse::Req,
                }));
            }
        }
        out
    }

    /// Timewait is over, whatever the deadline (for a caller that runs its
    /// own timewait timer): back to `Idle`, with `TimewaitExit`.
    pub fn on_timewait_expired(&mut self, _now: u64) -> Actions {
        let mut out = Actions::new();
        if self.state != State::TimeWait {
            out.push(Action::Drop);
            return out;
        }
        self.stop_timer(&mut out);
        self.reset_to_idle();
        out.push(Action::Event(Event::TimewaitExit));
        out
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn iba_times_as_the_c_converts_them() {
        assert_eq!(iba_time_to_ms(0), 1);
        assert_eq!(iba_time_to_ms(8), 1);
        assert_eq!(iba_time_to_ms(9), 2);
        assert_eq!(iba_time_to_ms(20), 4096);
        assert_eq!(iba_time_to_ms(31), 1 << 23);
        assert_eq!(iba_time_to_ms(255), 1 << 23, "clamped");
    }

    /// `cm_ack_timeout`, written the C's way, against ours for all inputs.
    #[test]
    fn ack_timeout_matches_the_c_formula() {
        fn c(delay: u8, life: u8) -> u8 {
            let delay = i32::from(delay);
            let mut t = i32::from(life) + 1;
            if t >= delay {
                t += i32::from(delay >= t - 1);
            } else {
                t = delay + i32::from(t >= delay - 1);
            }
            t.min(31) as u8
        }
        for delay in 0..=40u8 {
            for life in 0..=40u8 {
                assert_eq!(ack_timeout(delay, life), c(delay, life), "{delay} {life}");
            }
        }
        assert_eq!(ack_timeout(255, 255), 31);
        // rxe through rdma_cm: CA ACK delay 15, packet life time 16.
        assert_eq!(ack_timeout(15, 16), 17);
        assert_eq!(iba_time_to_ms(ack_timeout(15, 16)), 512);
    }

    #[test]
    fn actions_list() {
        let mut a = Actions::new();
        assert!(a.is_empty());
        for _ in 0..ACTIONS_CAP + 2 {
            a.push(Action::SendRtu);
        }
        assert_eq!(a.len(), ACTIONS_CAP, "extra actions are lost, no panic");
        assert!(Actions::drop_input().is_drop());
        assert_eq!(a.events().count(), 0);
    }
}
