// SPDX-License-Identifier: GPL-2.0

//! The CM connection state machine: whole connections from both ends,
//! duplicates, retries, MRA, rejects, timewait, and every input in every
//! state against a table.

use rdma_spec::cm_msg::{
    CmMessage, Drep, Dreq, Mra, MsgResponse, Rej, RejReason, Rep, Req, ReqPath, Rtu,
};
use rdma_spec::cm_state::{AcceptParams, Action, Conn, ConnectParams, Event, State, ACTIONS_CAP};

/// Our communication ID and QPN.
const L: u32 = 0x1111;
const QPN_L: u32 = 0x11;
/// The peer's.
const R: u32 = 0x2222;
const QPN_R: u32 = 0x22;

/// rdma_cm over rxe: packet life time 16, response timeout 20: the REQ
/// waits 2 * 256 + 4096 ms.
const REQ_WAIT: u64 = 4608;
/// The passive side waits 1 << (20 - 8) ms for the RTU.
const REP_WAIT: u64 = 4096;
/// Timewait with CA ACK delay 15 and packet life time 16: 1 << (17 - 8).
const TIMEWAIT: u64 = 512;

fn connect_params(retries: u8) -> ConnectParams {
    ConnectParams {
        local_qpn: QPN_L,
        packet_life_time: 16,
        remote_cm_response_timeout: 20,
        max_cm_retries: retries,
    }
}

fn req(retries: u8) -> Req {
    Req {
        local_comm_id: R,
        local_qpn: QPN_R,
        local_cm_response_timeout: 20,
        remote_cm_response_timeout: 20,
        max_cm_retries: retries,
        primary_path: ReqPath {
            local_ack_timeout: 17,
            ..ReqPath::default()
        },
        ..Req::default()
    }
}

fn rep() -> Rep {
    Rep {
        local_comm_id: R,
        remote_comm_id: L,
        local_qpn: QPN_R,
        target_ack_delay: 15,
        ..Rep::default()
    }
}

fn rtu() -> Rtu {
    Rtu {
        local_comm_id: R,
        remote_comm_id: L,
        ..Rtu::default()
    }
}

fn mra(of: MsgResponse, service_timeout: u8) -> Mra {
    Mra {
        local_comm_id: R,
        remote_comm_id: L,
        message_mraed: of as u8,
        service_timeout,
        ..Mra::default()
    }
}

fn rej(reason: RejReason) -> Rej {
    Rej {
        local_comm_id: R,
        remote_comm_id: L,
        message_rejected: MsgResponse::Req as u8,
        reject_info_length: 8,
        reason: reason as u16,
        ..Rej::default()
    }
}

fn dreq() -> Dreq {
    Dreq {
        local_comm_id: R,
        remote_comm_id: L,
        remote_qpn_eecn: QPN_L,
        ..Dreq::default()
    }
}

fn drep() -> Drep {
    Drep {
        local_comm_id: R,
        remote_comm_id: L,
        ..Drep::default()
    }
}

const ACCEPT: AcceptParams = AcceptParams { local_qpn: QPN_L };

fn ev(e: Event) -> Action {
    Action::Event(e)
}

#[test]
fn active_connection_and_disconnection() {
    let mut c = Conn::new(L);
    assert_eq!(c.state(), State::Idle);
    assert_eq!(
        c.connect(100, connect_params(3)).as_slice(),
        [
            Action::SendReq,
            Action::StartTimer {
                deadline: 100 + REQ_WAIT
            }
        ]
    );
    assert_eq!(c.state(), State::ReqSent);
    assert!(c.is_active());
    assert!(c.on_timeout(100 + REQ_WAIT - 1).is_drop(), "early");

    assert_eq!(
        c.on_rep(&rep(), 200).as_slice(),
        [Action::StopTimer, Action::SendRtu, ev(Event::Established)]
    );
    assert_eq!(c.state(), State::Established);
    assert_eq!(c.remote_comm_id(), Some(R));
    assert_eq!(c.remote_qpn(), Some(QPN_R));
    assert_eq!(c.deadline(), None);
    assert_eq!(c.timewait_ms(), TIMEWAIT);

    assert_eq!(
        c.disconnect(1000).as_slice(),
        [
            Action::SendDreq,
            Action::StartTimer {
                deadline: 1000 + REQ_WAIT
            }
        ]
    );
    assert_eq!(c.state(), State::DreqSent);
    assert_eq!(
        c.on_drep(&drep(), 1010).as_slice(),
        [
            Action::StartTimer {
                deadline: 1010 + TIMEWAIT
            },
            ev(Event::Disconnected { timed_out: false })
        ]
    );
    assert_eq!(c.state(), State::TimeWait);
    assert!(c.on_drep(&drep(), 1011).is_drop(), "duplicate DREP");
    assert!(c.on_timeout(1010 + TIMEWAIT - 1).is_drop());
    assert_eq!(
        c.on_timeout(1010 + TIMEWAIT).as_slice(),
        [ev(Event::TimewaitExit)]
    );
    assert_eq!(c.state(), State::Idle);
    assert_eq!(c.deadline(), None);
    assert_eq!(c.remote_comm_id(), None);

    // The connection end can be used again.
    assert_eq!(c.connect(5000, connect_params(3)).len(), 2);
    assert_eq!(c.state(), State::ReqSent);
}

#[test]
fn passive_connection_and_disconnection() {
    let mut c = Conn::new(L);
    assert_eq!(c.on_req(&req(3), 0).as_slice(), [ev(Event::ReqReceived)]);
    assert_eq!(c.state(), State::ReqRcvd);
    assert!(!c.is_active());
    assert_eq!(c.remote_comm_id(), Some(R));
    assert_eq!(c.deadline(), None);
    assert!(c.on_timeout(1_000_000).is_drop(), "no timer yet");

    assert_eq!(
        c.accept(10, ACCEPT).as_slice(),
        [
            Action::SendRep,
            Action::StartTimer {
                deadline: 10 + REP_WAIT
            }
        ]
    );
    assert_eq!(c.state(), State::RepSent);
    assert!(c.accept(11, ACCEPT).is_drop(), "twice");

    assert_eq!(
        c.on_rtu(&rtu(), 20).as_slice(),
        [Action::StopTimer, ev(Event::Established)]
    );
    assert_eq!(c.state(), State::Established);
    assert!(c.on_rtu(&rtu(), 21).is_drop(), "duplicate RTU");
    // As cm_dup_rep_handler: a REP with the connection's IDs in
    // Established is answered by an RTU, on either side.
    assert_eq!(c.on_rep(&rep(), 22).as_slice(), [Action::SendRtu]);
    assert_eq!(c.state(), State::Established);

    assert_eq!(
        c.on_dreq(&dreq(), 500).as_slice(),
        [
            Action::SendDrep,
            Action::StartTimer {
                deadline: 500 + TIMEWAIT
            },
            ev(Event::Disconnected { timed_out: false })
        ]
    );
    assert_eq!(c.state(), State::TimeWait);
    assert_eq!(
        c.on_timewait_expired(501).as_slice(),
        [Action::StopTimer, ev(Event::TimewaitExit)]
    );
    assert_eq!(c.state(), State::Idle);
    assert!(c.on_timewait_expired(502).is_drop());
}

#[test]
fn passive_established_by_traffic_before_the_rtu() {
    let mut c = Conn::new(L);
    c.on_req(&req(3), 0);
    c.accept(0, ACCEPT);
    assert_eq!(
        c.established(5).as_slice(),
        [Action::StopTimer, ev(Event::Established)]
    );
    assert!(c.on_rtu(&rtu(), 6).is_drop(), "the late RTU");
    assert!(c.established(7).is_drop());
}

#[test]
fn duplicate_req() {
    let mut c = Conn::new(L);
    c.on_req(&req(3), 0);
    // The consumer has not answered and asked for nothing: dropped, as
    // cm_dup_req_handler does in IB_CM_REQ_RCVD.
    assert!(c.on_req(&req(3), 1).is_drop());
    assert_eq!(c.state(), State::ReqRcvd);
    // rdma_cm's delayed MRA: nothing sent now, an MRA for each duplicate.
    assert!(c.send_mra(2, 0x80 | 24, true).is_empty());
    assert_eq!(c.state(), State::MraReqSent);
    let mra_again = [Action::SendMra {
        mraed: MsgResponse::Req,
        service_timeout: 24,
    }];
    assert_eq!(c.on_req(&req(3), 3).as_slice(), mra_again);
    assert_eq!(c.on_req(&req(3), 4).as_slice(), mra_again);
    // A REQ from someone else is not ours.
    let other = Req {
        local_comm_id: R + 1,
        ..req(3)
    };
    assert!(c.on_req(&other, 5).is_drop());
    // After the REP: dropped (the REP's own retries answer it).
    c.accept(6, ACCEPT);
    assert!(c.on_req(&req(3), 7).is_drop());
    assert_eq!(c.state(), State::RepSent);
    // In timewait: a stale-connection REJ.
    c.on_rtu(&rtu(), 8);
    c.on_dreq(&dreq(), 9);
    assert_eq!(
        c.on_req(&req(3), 10).as_slice(),
        [Action::SendRej {
            reason: RejReason::StaleConn,
            rejected: MsgResponse::Other,
            private_data_len: 0
        }]
    );
    assert_eq!(c.state(), State::TimeWait);
}

#[test]
fn mra_sent_at_once() {
    let mut c = Conn::new(L);
    c.on_req(&req(3), 0);
    assert_eq!(
        c.send_mra(1, 20, false).as_slice(),
        [Action::SendMra {
            mraed: MsgResponse::Req,
            service_timeout: 20
        }]
    );
    assert!(c.send_mra(2, 20, false).is_drop(), "only from ReqRcvd");
    assert_eq!(c.accept(3, ACCEPT).len(), 2);
}

#[test]
fn duplicate_rep_resends_the_rtu() {
    let mut c = Conn::new(L);
    c.connect(0, connect_params(3));
    c.on_rep(&rep(), 10);
    assert_eq!(c.on_rep(&rep(), 20).as_slice(), [Action::SendRtu]);
    assert_eq!(c.on_rep(&rep(), 30).as_slice(), [Action::SendRtu]);
    assert_eq!(c.state(), State::Established);
    let stranger = Rep {
        local_comm_id: R + 1,
        ..rep()
    };
    assert!(c.on_rep(&stranger, 40).is_drop());
    // Once disconnecting, a REP is dropped.
    c.disconnect(50);
    assert!(c.on_rep(&rep(), 60).is_drop());
}

#[test]
fn a_rep_for_another_connection_is_dropped() {
    let mut c = Conn::new(L);
    c.connect(0, connect_params(3));
    let other = Rep {
        remote_comm_id: L + 1,
        ..rep()
    };
    assert!(c.on_rep(&other, 1).is_drop());
    assert_eq!(c.state(), State::ReqSent);
}

#[test]
fn duplicate_dreq_resends_the_drep() {
    let mut c = Conn::new(L);
    c.connect(0, connect_params(3));
    c.on_rep(&rep(), 1);
    assert_eq!(c.on_dreq(&dreq(), 2).len(), 3);
    assert_eq!(c.on_dreq(&dreq(), 3).as_slice(), [Action::SendDrep]);
    assert_eq!(c.on_dreq(&dreq(), 4).as_slice(), [Action::SendDrep]);
    assert_eq!(c.state(), State::TimeWait);
    assert_eq!(c.deadline(), Some(2 + TIMEWAIT), "not restarted");
    let wrong_qpn = Dreq {
        remote_qpn_eecn: QPN_L + 1,
        ..dreq()
    };
    assert!(c.on_dreq(&wrong_qpn, 5).is_drop());
}

#[test]
fn dreqs_cross() {
    let mut c = Conn::new(L);
    c.connect(0, connect_params(3));
    c.on_rep(&rep(), 1);
    c.disconnect(2);
    assert_eq!(
        c.on_dreq(&dreq(), 3).as_slice(),
        [
            Action::SendDrep,
            Action::StartTimer {
                deadline: 3 + TIMEWAIT
            },
            ev(Event::Disconnected { timed_out: false })
        ]
    );
    assert!(c.on_drep(&drep(), 4).is_drop(), "already in timewait");
}

#[test]
fn req_retries_then_unreachable() {
    let mut c = Conn::new(L);
    c.connect(0, connect_params(2));
    let mut now = REQ_WAIT;
    for _ in 0..2 {
        assert_eq!(
            c.on_timeout(now).as_slice(),
            [
                Action::SendReq,
                Action::StartTimer {
                    deadline: now + REQ_WAIT
                }
            ]
        );
        assert_eq!(c.state(), State::ReqSent);
        now += REQ_WAIT;
    }
    // No REJ: the C resets to idle and reports IB_CM_REQ_ERROR.
    assert_eq!(
        c.on_timeout(now).as_slice(),
        [ev(Event::Unreachable {
            msg: MsgResponse::Req
        })]
    );
    assert_eq!(c.state(), State::Idle);
    assert_eq!(c.deadline(), None);
    assert!(c.on_timeout(now + 1).is_drop());
}

#[test]
fn rep_retries_then_unreachable() {
    let mut c = Conn::new(L);
    c.on_req(&req(1), 0);
    c.accept(0, ACCEPT);
    assert_eq!(
        c.on_timeout(REP_WAIT).as_slice(),
        [
            Action::SendRep,
            Action::StartTimer {
                deadline: 2 * REP_WAIT
            }
        ]
    );
    assert_eq!(
        c.on_timeout(2 * REP_WAIT).as_slice(),
        [ev(Event::Unreachable {
            msg: MsgResponse::Rep
        })]
    );
    assert_eq!(c.state(), State::Idle);
    assert!(c.on_rtu(&rtu(), 2 * REP_WAIT + 1).is_drop(), "too late");
}

#[test]
fn mra_extends_the_req_timer() {
    let mut c = Conn::new(L);
    c.connect(0, connect_params(1));
    // MRA service timeout 24: 1 << 16 ms, plus the ack timeout (packet
    // life time + 1 = 17 before the REP): 1 << 9 ms.
    let wait = (1 << 16) + 512;
    assert_eq!(
        c.on_mra(&mra(MsgResponse::Req, 24), 1000).as_slice(),
        [
            Action::StartTimer {
                deadline: 1000 + wait
            },
            ev(Event::MraReceived {
                service_timeout: 24
            })
        ]
    );
    assert_eq!(c.state(), State::MraReqRcvd);
    assert!(
        c.on_mra(&mra(MsgResponse::Req, 24), 1001).is_drop(),
        "duplicate"
    );
    assert!(c.on_timeout(REQ_WAIT).is_drop(), "the old deadline is gone");
    // The retry waits as long as the MRA asked, too.
    assert_eq!(
        c.on_timeout(1000 + wait).as_slice(),
        [
            Action::SendReq,
            Action::StartTimer {
                deadline: 1000 + 2 * wait
            }
        ]
    );
    assert_eq!(c.on_rep(&rep(), 1000 + wait + 5).len(), 3);
    assert_eq!(c.state(), State::Established);
}

#[test]
fn mra_extends_the_rep_timer() {
    let mut c = Conn::new(L);
    c.on_req(&req(3), 0);
    c.accept(0, ACCEPT);
    assert!(
        c.on_mra(&mra(MsgResponse::Req, 10), 1).is_drop(),
        "wrong message"
    );
    // Service timeout 10: 4 ms, plus the REQ's local ACK timeout 17: 512.
    assert_eq!(
        c.on_mra(&mra(MsgResponse::Rep, 10), 1).as_slice(),
        [
            Action::StartTimer { deadline: 1 + 516 },
            ev(Event::MraReceived {
                service_timeout: 10
            })
        ]
    );
    assert_eq!(c.state(), State::MraRepRcvd);
    assert_eq!(
        c.on_rtu(&rtu(), 2).as_slice(),
        [Action::StopTimer, ev(Event::Established)]
    );
}

#[test]
fn rej_from_the_peer() {
    let mut c = Conn::new(L);
    c.connect(0, connect_params(3));
    assert_eq!(
        c.on_rej(&rej(RejReason::ConsumerDefined), 5).as_slice(),
        [
            Action::StopTimer,
            ev(Event::Rejected {
                reason: RejReason::ConsumerDefined as u16,
                ari_len: 8,
                private_data_len: 148
            })
        ]
    );
    assert_eq!(c.state(), State::Idle);
    assert!(c.on_rej(&rej(RejReason::ConsumerDefined), 6).is_drop());

    // Stale connection: timewait rather than idle.
    let mut c = Conn::new(L);
    c.connect(0, connect_params(3));
    let a = c.on_rej(&rej(RejReason::StaleConn), 5);
    assert_eq!(
        a.as_slice()[0],
        Action::StartTimer {
            // Before the REP the ack timeout is packet life time + 1.
            deadline: 5 + 512
        }
    );
    assert_eq!(c.state(), State::TimeWait);

    // A REJ for someone else.
    let mut c = Conn::new(L);
    c.connect(0, connect_params(3));
    let other = Rej {
        remote_comm_id: L + 1,
        ..rej(RejReason::NoQp)
    };
    assert!(c.on_rej(&other, 1).is_drop());

    // An unknown reason is still delivered, raw.
    let odd = Rej {
        reason: 999,
        ..rej(RejReason::NoQp)
    };
    assert_eq!(
        c.on_rej(&odd, 2).events().next(),
        Some(Event::Rejected {
            reason: 999,
            ari_len: 8,
            private_data_len: 148
        })
    );
}

#[test]
fn consumer_reject() {
    let mut c = Conn::new(L);
    c.on_req(&req(3), 0);
    assert!(
        c.reject(1, RejReason::ConsumerDefined, 149).is_drop(),
        "too much private data"
    );
    assert_eq!(
        c.reject(1, RejReason::ConsumerDefined, 10).as_slice(),
        [Action::SendRej {
            reason: RejReason::ConsumerDefined,
            rejected: MsgResponse::Req,
            private_data_len: 10
        }]
    );
    assert_eq!(c.state(), State::Idle);

    // After the REP, the REJ ends in timewait.
    let mut c = Conn::new(L);
    c.on_req(&req(3), 0);
    c.accept(0, ACCEPT);
    assert_eq!(
        c.reject(100, RejReason::ConsumerDefined, 0).as_slice(),
        [
            Action::SendRej {
                reason: RejReason::ConsumerDefined,
                rejected: MsgResponse::Other,
                private_data_len: 0
            },
            Action::StartTimer {
                deadline: 100 + TIMEWAIT
            }
        ]
    );
    assert_eq!(c.state(), State::TimeWait);

    // The active side abandoning its REQ.
    let mut c = Conn::new(L);
    c.connect(0, connect_params(3));
    assert_eq!(
        c.reject(1, RejReason::Timeout, 0).as_slice(),
        [
            Action::SendRej {
                reason: RejReason::Timeout,
                rejected: MsgResponse::Other,
                private_data_len: 0
            },
            Action::StopTimer
        ]
    );
    assert_eq!(c.state(), State::Idle);
    assert!(c.reject(2, RejReason::Timeout, 0).is_drop());
}

#[test]
fn dreq_lost_then_timewait() {
    let mut c = Conn::new(L);
    c.connect(0, connect_params(1));
    c.on_rep(&rep(), 0);
    c.disconnect(100);
    assert_eq!(
        c.on_timeout(100 + REQ_WAIT).as_slice(),
        [
            Action::SendDreq,
            Action::StartTimer {
                deadline: 100 + 2 * REQ_WAIT
            }
        ]
    );
    let t = 100 + 2 * REQ_WAIT;
    assert_eq!(
        c.on_timeout(t).as_slice(),
        [
            Action::StartTimer {
                deadline: t + TIMEWAIT
            },
            ev(Event::Disconnected { timed_out: true })
        ]
    );
    assert_eq!(c.state(), State::TimeWait);
    // A late DREP changes nothing; timewait still ends it.
    assert!(c.on_drep(&drep(), t + 1).is_drop());
    assert_eq!(
        c.on_timeout(t + TIMEWAIT).as_slice(),
        [ev(Event::TimewaitExit)]
    );
    assert_eq!(c.state(), State::Idle);
}

#[test]
fn passive_dreq_timer_uses_the_req_response_timeout() {
    let mut c = Conn::new(L);
    c.on_req(&req(0), 0);
    c.accept(0, ACCEPT);
    c.on_rtu(&rtu(), 1);
    assert_eq!(
        c.disconnect(10).as_slice(),
        [
            Action::SendDreq,
            Action::StartTimer {
                deadline: 10 + REP_WAIT
            }
        ]
    );
    assert_eq!(
        c.on_timeout(10 + REP_WAIT).events().next(),
        Some(Event::Disconnected { timed_out: true })
    );
}

// ---------------------------------------------------------------------------
// Every input in every state.

#[derive(Clone, Copy, Debug)]
enum Input {
    Connect,
    Req,
    Rep,
    Rtu,
    MraReq,
    MraRep,
    Rej,
    RejStale,
    RejOther,
    Dreq,
    Drep,
    Accept,
    Reject,
    SendMra,
    CommEst,
    Disconnect,
    Timeout,
    TimewaitExpired,
}

const INPUTS: [Input; 18] = [
    Input::Connect,
    Input::Req,
    Input::Rep,
    Input::Rtu,
    Input::MraReq,
    Input::MraRep,
    Input::Rej,
    Input::RejStale,
    Input::RejOther,
    Input::Dreq,
    Input::Drep,
    Input::Accept,
    Input::Reject,
    Input::SendMra,
    Input::CommEst,
    Input::Disconnect,
    Input::Timeout,
    Input::TimewaitExpired,
];

/// With no retries, so that a timeout ends the wait at once.
const RETRIES: u8 = 0;
const T: u64 = 1_000_000;

fn apply(c: &mut Conn, i: Input, now: u64) -> rdma_spec::cm_state::Actions {
    match i {
        Input::Connect => c.connect(now, connect_params(RETRIES)),
        Input::Req => c.on_req(&req(RETRIES), now),
        Input::Rep => c.on_rep(&rep(), now),
        Input::Rtu => c.on_rtu(&rtu(), now),
        Input::MraReq => c.on_mra(&mra(MsgResponse::Req, 24), now),
        Input::MraRep => c.on_mra(&mra(MsgResponse::Rep, 24), now),
        Input::Rej => c.on_rej(&rej(RejReason::ConsumerDefined), now),
        Input::RejStale => c.on_rej(&rej(RejReason::StaleConn), now),
        Input::RejOther => c.on_rej(
            &Rej {
                message_rejected: MsgResponse::Other as u8,
                ..rej(RejReason::ConsumerDefined)
            },
            now,
        ),
        Input::Dreq => c.on_dreq(&dreq(), now),
        Input::Drep => c.on_drep(&drep(), now),
        Input::Accept => c.accept(now, ACCEPT),
        Input::Reject => c.reject(now, RejReason::ConsumerDefined, 0),
        Input::SendMra => c.send_mra(now, 24, false),
        Input::CommEst => c.established(now),
        Input::Disconnect => c.disconnect(now),
        Input::Timeout => c.on_timeout(now),
        Input::TimewaitExpired => c.on_timewait_expired(now),
    }
}

/// A connection end in state `s`, reached by legal inputs.
fn reach(s: State) -> Conn {
    use Input::*;
    let path: &[Input] = match s {
        State::Idle => &[],
        State::ReqSent => &[Connect],
        State::MraReqRcvd => &[Connect, MraReq],
        State::ReqRcvd => &[Req],
        State::MraReqSent => &[Req, SendMra],
        State::RepSent => &[Req, Accept],
        State::MraRepRcvd => &[Req, Accept, MraRep],
        State::Established => &[Connect, Rep],
        State::DreqSent => &[Connect, Rep, Disconnect],
        State::TimeWait => &[Connect, Rep, Disconnect, Drep],
    };
    let mut c = Conn::new(L);
    for i in path {
        assert!(!apply(&mut c, *i, 0).is_drop(), "{s:?}: {i:?}");
    }
    assert_eq!(c.state(), s);
    c
}

/// What an input does in a state.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cell {
    /// Dropped: no change.
    D,
    /// Handled, to this state.
    S(State),
}

use Cell::{D, S};
use State::{
    DreqSent as DS, Established as ES, Idle as ID, MraRepRcvd as MPR, MraReqRcvd as MQR,
    MraReqSent as MQS, RepSent as PS, ReqRcvd as QR, ReqSent as QS, TimeWait as TW,
};

/// Rows: states in `State::ALL` order; columns: `INPUTS` order. `Rej` and
/// `RejStl` reject the REQ, which the C finds by our ID only while the
/// peer's is not known (so never once it is); `RejOth` rejects anything
/// else, found by both IDs (so never before the peer's is known).
#[rustfmt::skip]
const TABLE: [[Cell; 18]; 10] = [
    //            Connect Req     Rep     Rtu     MraReq  MraRep  Rej     RejStl  RejOth  Dreq    Drep    Accept  Reject  SendMra CommEst Disc    Timeout TwExp
    /* Idle  */ [S(QS),  S(QR),  D,      D,      D,      D,      D,      D,      D,      D,      D,      D,      D,      D,      D,      D,      D,      D],
    /* QS    */ [D,      D,      S(ES),  D,      S(MQR), D,      S(ID),  S(TW),  D,      D,      D,      D,      S(ID),  D,      D,      D,      S(ID),  D],
    /* MQR   */ [D,      D,      S(ES),  D,      D,      D,      S(ID),  S(TW),  D,      D,      D,      D,      S(ID),  D,      D,      D,      S(ID),  D],
    /* QR    */ [D,      D,      D,      D,      D,      D,      D,      D,      S(ID),  D,      D,      S(PS),  S(ID),  S(MQS), D,      D,      D,      D],
    /* MQS   */ [D,      S(MQS), D,      D,      D,      D,      D,      D,      S(ID),  D,      D,      S(PS),  S(ID),  D,      D,      D,      D,      D],
    /* PS    */ [D,      D,      D,      S(ES),  D,      S(MPR), D,      D,      S(ID),  S(TW),  D,      D,      S(TW),  D,      S(ES),  D,      S(ID),  D],
    /* MPR   */ [D,      D,      D,      S(ES),  D,      D,      D,      D,      S(ID),  S(TW),  D,      D,      S(TW),  D,      S(ES),  D,      S(ID),  D],
    /* ES    */ [D,      D,      S(ES),  D,      D,      D,      D,      D,      S(TW),  S(TW),  D,      D,      D,      D,      D,      S(DS),  D,      D],
    /* DS    */ [D,      D,      D,      D,      D,      D,      D,      D,      S(TW),  S(TW),  S(TW),  D,      D,      D,      D,      D,      S(TW),  D],
    /* TW    */ [D,      S(TW),  D,      D,      D,      D,      D,      D,      D,      S(TW),  D,      D,      D,      D,      D,      D,      S(ID),  S(ID)],
];

/// Messages with our ID and another peer's, in every state: once the
/// peer's ID is known, none is the connection's (the C's lookup by both
/// IDs fails, so it never reaches the state machine: a REJ "of the REQ"
/// cannot end an established connection). Before, only a first REP, a
/// REJ of the REQ and an MRA of it are taken by our ID alone. A message
/// for another of our IDs is never taken.
#[test]
fn wrong_peer_ids_are_not_ours() {
    const X: u32 = 0x3333;
    for s in State::ALL {
        let c = reach(s);
        let known = c.remote_comm_id().is_some();
        let by_both = [
            CmMessage::Rtu(Rtu {
                local_comm_id: X,
                ..rtu()
            }),
            CmMessage::Dreq(Dreq {
                local_comm_id: X,
                ..dreq()
            }),
            CmMessage::Drep(Drep {
                local_comm_id: X,
                ..drep()
            }),
            CmMessage::Rej(Rej {
                local_comm_id: X,
                message_rejected: MsgResponse::Other as u8,
                ..rej(RejReason::ConsumerDefined)
            }),
            CmMessage::Mra(Mra {
                local_comm_id: X,
                ..mra(MsgResponse::Rep, 24)
            }),
        ];
        for m in by_both {
            assert!(!c.takes(&m), "{s:?} {m:?}");
        }
        let by_ours = [
            CmMessage::Rep(Rep {
                local_comm_id: X,
                ..rep()
            }),
            CmMessage::Rej(Rej {
                local_comm_id: X,
                ..rej(RejReason::ConsumerDefined)
            }),
            CmMessage::Mra(Mra {
                local_comm_id: X,
                ..mra(MsgResponse::Req, 24)
            }),
        ];
        for m in by_ours {
            assert_eq!(c.takes(&m), !known, "{s:?} {m:?}");
        }
        // The right IDs: taken (a REJ or MRA of the REQ only before).
        for m in [
            CmMessage::Rtu(rtu()),
            CmMessage::Dreq(dreq()),
            CmMessage::Drep(drep()),
            CmMessage::Mra(mra(MsgResponse::Rep, 24)),
        ] {
            assert_eq!(c.takes(&m), known, "{s:?} {m:?}");
        }
        assert!(c.takes(&CmMessage::Rep(rep())), "{s:?}");
        assert_eq!(
            c.takes(&CmMessage::Rej(rej(RejReason::ConsumerDefined))),
            !known,
            "{s:?}"
        );
        let other = CmMessage::Rtu(Rtu {
            remote_comm_id: L + 1,
            ..rtu()
        });
        assert!(!c.takes(&other), "{s:?}");
    }
}

/// What the C counts as a duplicate among the messages a connection takes
/// and drops: a stray RTU or REP in Established yes; a DREQ with another
/// QPN, a DREP or REJ the state does not take no; an MRA once one came.
#[test]
fn dropped_duplicates_as_the_c_counts_them() {
    let es = reach(State::Established);
    let mut c = es;
    assert!(c.on_rtu(&rtu(), T).is_drop());
    assert!(es.dropped_as_duplicate(&CmMessage::Rtu(rtu())));
    let wrong_qpn = Dreq {
        remote_qpn_eecn: QPN_L + 1,
        ..dreq()
    };
    assert!(es.takes(&CmMessage::Dreq(wrong_qpn)));
    assert!(c.on_dreq(&wrong_qpn, T).is_drop());
    assert_eq!(c.state(), State::Established, "a DREQ for another QPN");
    assert!(!es.dropped_as_duplicate(&CmMessage::Dreq(wrong_qpn)));
    assert!(c.on_drep(&drep(), T).is_drop());
    assert!(!es.dropped_as_duplicate(&CmMessage::Drep(drep())));
    let mpr = reach(State::MraRepRcvd);
    assert!(mpr.dropped_as_duplicate(&CmMessage::Mra(mra(MsgResponse::Rep, 24))));
    assert!(!reach(State::RepSent).dropped_as_duplicate(&CmMessage::Mra(mra(MsgResponse::Req, 24))));
}

#[test]
fn transition_table() {
    for (row, s) in TABLE.iter().zip(State::ALL) {
        for (cell, i) in row.iter().zip(INPUTS) {
            let mut c = reach(s);
            let before = c;
            let a = apply(&mut c, i, T);
            assert!(a.len() < ACTIONS_CAP, "{s:?} {i:?}: {a:?}");
            match *cell {
                D => {
                    assert!(a.is_drop(), "{s:?} {i:?} should drop: {a:?}");
                    assert_eq!(c, before, "{s:?} {i:?}: a drop changes nothing");
                }
                S(next) => {
                    assert!(!a.is_drop(), "{s:?} {i:?} dropped");
                    assert!(!a.contains(&Action::Drop), "{s:?} {i:?}: {a:?}");
                    assert_eq!(c.state(), next, "{s:?} {i:?}: {a:?}");
                }
            }
            // A timer runs exactly in the states that wait for something.
            let waits = matches!(
                c.state(),
                State::ReqSent
                    | State::MraReqRcvd
                    | State::RepSent
                    | State::MraRepRcvd
                    | State::DreqSent
                    | State::TimeWait
            );
            assert_eq!(
                c.deadline().is_some(),
                waits,
                "{s:?} {i:?} -> {:?}",
                c.state()
            );
        }
    }
}

/// Arbitrary messages and inputs, in any order, with arbitrary field
/// values and times: no panic, never more actions than fit, and a timer
/// exactly when waiting.
#[test]
fn arbitrary_inputs_never_panic() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..200 {
        let mut c = Conn::new(L);
        let mut now = 0u64;
        for _ in 0..200 {
            let r = next();
            now = match r % 4 {
                0 => now,
                1 => now.saturating_add(r >> 40),
                2 => u64::MAX - (r % 3),
                _ => r >> 8,
            };
            let pick = |x: u64| -> u32 {
                match x % 4 {
                    0 => L,
                    1 => R,
                    2 => 0,
                    _ => x as u32,
                }
            };
            let (a, b) = (pick(next()), pick(next()));
            let byte = next() as u8;
            let acts = match next() % 17 {
                0 => c.connect(
                    now,
                    ConnectParams {
                        local_qpn: pick(next()),
                        packet_life_time: byte,
                        remote_cm_response_timeout: next() as u8,
                        max_cm_retries: next() as u8 % 4,
                    },
                ),
                1 => c.on_req(
                    &Req {
                        local_comm_id: a,
                        max_cm_retries: byte % 3,
                        local_cm_response_timeout: next() as u8,
                        primary_path: ReqPath {
                            local_ack_timeout: next() as u8,
                            ..ReqPath::default()
                        },
                        ..Req::default()
                    },
                    now,
                ),
                2 => c.on_rep(
                    &Rep {
                        local_comm_id: a,
                        remote_comm_id: b,
                        target_ack_delay: byte,
                        ..Rep::default()
                    },
                    now,
                ),
                3 => c.on_rtu(
                    &Rtu {
                        local_comm_id: a,
                        remote_comm_id: b,
                        ..Rtu::default()
                    },
                    now,
                ),
                4 => c.on_mra(
                    &Mra {
                        local_comm_id: a,
                        remote_comm_id: b,
                        message_mraed: byte % 4,
                        service_timeout: next() as u8,
                        ..Mra::default()
                    },
                    now,
                ),
                5 => c.on_rej(
                    &Rej {
                        local_comm_id: a,
                        remote_comm_id: b,
                        message_rejected: byte % 4,
                        reason: next() as u16 % 40,
                        reject_info_length: next() as u8,
                        ..Rej::default()
                    },
                    now,
                ),
                6 => c.on_dreq(
                    &Dreq {
                        local_comm_id: a,
                        remote_comm_id: b,
                        remote_qpn_eecn: pick(next()),
                        ..Dreq::default()
                    },
                    now,
                ),
                7 => c.on_drep(
                    &Drep {
                        local_comm_id: a,
                        remote_comm_id: b,
                        ..Drep::default()
                    },
                    now,
                ),
                8 => c.accept(now, AcceptParams { local_qpn: a }),
                9 => c.reject(now, RejReason::NoResources, byte),
                10 => c.send_mra(now, byte, next() % 2 == 0),
                11 => c.established(now),
                12 => c.disconnect(now),
                13 => c.on_timewait_expired(now),
                _ => c.on_timeout(now),
            };
            assert!(acts.len() < ACTIONS_CAP);
            let waits = matches!(
                c.state(),
                State::ReqSent
                    | State::MraReqRcvd
                    | State::RepSent
                    | State::MraRepRcvd
                    | State::DreqSent
                    | State::TimeWait
            );
            assert_eq!(c.deadline().is_some(), waits);
        }
    }
}

#[test]
fn timeout_rej_found_by_the_senders_id() {
    // The active side gave up before it knew our ID: its REJ names only
    // its own (and its node, in the ARI, by which the table found us).
    let mut c = Conn::new(L);
    c.on_req(&req(3), 0);
    let gave_up = Rej {
        remote_comm_id: 0,
        message_rejected: MsgResponse::Other as u8,
        ..rej(RejReason::Timeout)
    };
    let other = Rej {
        local_comm_id: R + 1,
        ..gave_up
    };
    assert!(c.on_rej(&other, 1).is_drop(), "another sender's");
    let acts = c.on_rej(&gave_up, 2);
    assert!(
        acts.events().any(
            |e| matches!(e, Event::Rejected { reason, .. } if reason == RejReason::Timeout as u16)
        ),
        "{acts:?}"
    );
    assert_eq!(c.state(), State::Idle);
}
