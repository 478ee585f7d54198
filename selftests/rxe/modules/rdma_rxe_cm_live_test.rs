// SPDX-License-Identifier: GPL-2.0

//! CM messages aimed at live connections (hostile.sh, `cm_live`): an
//! rdma_cm connection from rxa (10.78.3.1) to a listener on rxb
//! (10.78.3.2) is held in a state, its communication IDs, QPNs and rxa's
//! node GUID are logged (`cm live: CASE ours .. theirs .. qpn ..
//! peer_qpn .. guid ..`), and hostile.sh sends rxb well-formed but wrong
//! CM messages at it from rxa's address (pktinject `cm-at`), as many as
//! the case's [`Case::msgs`] says. The module waits until rxb's CM has
//! received them all, then checks what the C CM (`cm.c`) would have done
//! with each: the connection lives on (and data flows on it) or is torn
//! down, and rxb's counters moved by exactly what each message is
//! counted as (`cm_rx_drops`, `cm_rx_duplicates`, `cm_tx_msgs`).
//!
//! - `established`: both ends established. Messages with rxb's ID and
//!   another peer ID (a REJ "of the REQ", a REJ of another message, a
//!   DREQ, an RTU, a REP, an MRA, a DREP) find no connection, as in the C:
//!   dropped as `unknown_comm_id`, the DREQ answered by a DREP and counted
//!   as a duplicate; with both IDs right, a DREQ naming another QPN and a
//!   DREP are dropped as `unexpected`, a stray RTU, a REP (answered by an
//!   RTU) and a REQ again are duplicates. The connection stays; a SEND
//!   goes through. Then (`stale`) a REQ with a new ID from rxa's QP: REJ
//!   STALE_CONN, and the connection is disconnected by rxb (its DREQ), as
//!   the C CM does.
//! - `req_rcvd`: rxb got the REQ and has not accepted (MRA delayed). A
//!   REJ of the REQ and an MRA of it with another peer ID find no
//!   connection; an RTU with both IDs is a duplicate; a DREQ with both
//!   IDs is `unexpected`. Then rxb accepts: established, data flows.
//! - `req_sent`: rxb is the active end, its REQ held by a listener on
//!   rxa. A REJ (not of the REQ), an MRA of a REP, a DREQ and an RTU with
//!   another peer ID find no connection (the DREQ answered with a DREP).
//!   Then rxa accepts: established, data flows.

#![forbid(unsafe_code)]

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;

use kernel::sync::Arc;

use rdma::cm::counters::{CmCounters, DropReason, Group};
use rdma::cma::{CmId, CmIdCore, EventKind, IpAddr, SockAddr};
use rdma::kshim::time;
use rdma::spec::mad::{
    CM_ATTR_DREP, CM_ATTR_DREQ, CM_ATTR_REJ, CM_ATTR_REP, CM_ATTR_REQ, CM_ATTR_RTU,
};
use rdma::spec::opcodes::WcOpcode;

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rping.rs"]
#[allow(dead_code)]
mod rping;
use rping::{accept_pair, listen, request_pair, CmPair, Ep, Rec};

module! {
    type: RxeCmLiveTest,
    name: "rdma_rxe_cm_live_test",
    author: "rdma-rs developers",
    description: "Selftest: CM messages aimed at live connections",
    license: "GPL",
}

/// The listener's port.
const PORT: u16 = 5071;
/// How long to wait for hostile.sh's messages.
const WAIT_MS: u64 = 120_000;

/// The two sides and the listener on rxb.
type Ctx = CmPair;

impl Ctx {
    /// A connection from rxa up to rxb's connect request (not accepted):
    /// the client and the server's id.
    fn request(&self) -> Result<(CmId, CmId)> {
        request_pair(
            (&self.a, &self.ra),
            (&self.b, &self.rb),
            SockAddr {
                ip: IpAddr::V4([10, 78, 3, 2]),
                port: PORT,
            },
        )
    }

    /// rxb accepts; both ends see Established.
    fn accept(&self, server: &CmId) -> Result {
        accept_pair(server, &self.ra, &self.rb)
    }

    /// A SEND from rxa arrives at rxb with its bytes.
    fn data_flows(&self, client: &CmIdCore, server: &CmIdCore) -> Result {
        send_arrives((&self.a, &self.ra, client), (&self.b, &self.rb, server))
    }
}

/// A SEND from `from` arrives at `to` with its bytes.
fn send_arrives(from: (&Ep, &Rec, &CmIdCore), to: (&Ep, &Rec, &CmIdCore)) -> Result {
    to.0.post_recv(to.2, 0)?;
    from.0
        .send_info(from.2, 0x1122_3344_5566_7788, 0xabcd, 4096)?;
    check(
        from.0.wait(from.1, WcOpcode::Send)?.is_some(),
        "the SEND completed",
    )?;
    check(
        to.0.wait(to.1, WcOpcode::Recv)?.is_some(),
        "the SEND arrived",
    )?;
    check(
        to.0.info(0)? == (0x1122_3344_5566_7788, 0xabcd, 4096),
        "with its bytes",
    )
}

fn ctx(c: &mut Option<Ctx>) -> Result<&Ctx> {
    if c.is_none() {
        *c = Some(Ctx::new(PORT)?);
    }
    c.as_ref().ok_or(ENODEV)
}

/// rxb's CM counters that the cases check.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct Snap {
    /// Messages received but REQs.
    rx: u64,
    rx_req: u64,
    unknown: u64,
    unexpected: u64,
    dup_req: u64,
    dup_rep: u64,
    dup_rtu: u64,
    dup_dreq: u64,
    tx_rej: u64,
    tx_rtu: u64,
    tx_dreq: u64,
    tx_drep: u64,
}

impl Snap {
    fn take(c: &CmCounters) -> Snap {
        let rx = (CM_ATTR_REQ + 1..=CM_ATTR_DREP)
            .map(|a| c.get(Group::RxMsgs, a))
            .sum();
        Snap {
            rx,
            rx_req: c.get(Group::RxMsgs, CM_ATTR_REQ),
            unknown: c.drops(DropReason::UnknownCommId),
            unexpected: c.drops(DropReason::Unexpected),
            dup_req: c.get(Group::RxDuplicates, CM_ATTR_REQ),
            dup_rep: c.get(Group::RxDuplicates, CM_ATTR_REP),
            dup_rtu: c.get(Group::RxDuplicates, CM_ATTR_RTU),
            dup_dreq: c.get(Group::RxDuplicates, CM_ATTR_DREQ),
            tx_rej: c.get(Group::TxMsgs, CM_ATTR_REJ),
            tx_rtu: c.get(Group::TxMsgs, CM_ATTR_RTU),
            tx_dreq: c.get(Group::TxMsgs, CM_ATTR_DREQ),
            tx_drep: c.get(Group::TxMsgs, CM_ATTR_DREP),
        }
    }

    /// What moved since `s0`.
    fn since(self, s0: Snap) -> Snap {
        Snap {
            rx: self.rx - s0.rx,
            rx_req: self.rx_req - s0.rx_req,
            unknown: self.unknown - s0.unknown,
            unexpected: self.unexpected - s0.unexpected,
            dup_req: self.dup_req - s0.dup_req,
            dup_rep: self.dup_rep - s0.dup_rep,
            dup_rtu: self.dup_rtu - s0.dup_rtu,
            dup_dreq: self.dup_dreq - s0.dup_dreq,
            tx_rej: self.tx_rej - s0.tx_rej,
            tx_rtu: self.tx_rtu - s0.tx_rtu,
            tx_dreq: self.tx_dreq - s0.tx_dreq,
            tx_drep: self.tx_drep - s0.tx_drep,
        }
    }
}

fn counters(c: &Ctx) -> Result<Arc<CmCounters>> {
    rdma::cm::port::counters(c.b.dev.arc(), 1).ok_or(ENODEV)
}

/// Logs what hostile.sh needs to aim at `server`'s connection (case
/// `name`; `server` is rxb's id, `client` rxa's), then waits until what
/// moved on rxb's CM is `done`, and a moment for the last message to be
/// handled. Returns what moved.
fn aim(
    c: &Ctx,
    name: &str,
    client: &CmIdCore,
    server: &CmIdCore,
    done: impl Fn(&Snap) -> bool,
) -> Result<Snap> {
    let cnt = counters(c)?;
    let sc = server.cm_conn().ok_or(EINVAL)?;
    let qpn = server.qp().ok_or(EINVAL)?.qpn();
    let peer_qpn = client.qp().ok_or(EINVAL)?.qpn();
    let s0 = Snap::take(&cnt);
    pr_info!(
        "cm live: {} ours {:#x} theirs {:#x} qpn {:#x} peer_qpn {:#x} guid {:#x}\n",
        name,
        sc.local_comm_id(),
        sc.remote_comm_id().unwrap_or(0),
        qpn,
        peer_qpn,
        c.a.dev.arc().node_guid()
    );
    let start = time::now_ms();
    loop {
        let d = Snap::take(&cnt).since(s0);
        if done(&d) {
            break;
        }
        if time::now_ms() - start > WAIT_MS {
            pr_err!("cm live: {}: {:?}\n", name, Snap::take(&cnt).since(s0));
            return Err(EINVAL);
        }
        time::msleep(20);
    }
    time::msleep(500);
    let d = Snap::take(&cnt).since(s0);
    pr_info!("cm live: {}: {:?}\n", name, d);
    Ok(d)
}

/// Established on both ends; hostile.sh's 12 messages; then a stale REQ.
fn established(c: &mut Option<Ctx>) -> Result {
    let c = ctx(c)?;
    let (client, server) = c.request()?;
    c.accept(&server)?;
    let d = aim(c, "established", &client, &server, |d| {
        d.rx >= 11 && d.rx_req >= 1
    })?;
    let sc = server.cm_conn().ok_or(EINVAL)?;
    let cc = client.cm_conn().ok_or(EINVAL)?;
    check(
        sc.state() == rdma::spec::cm_state::State::Established
            && cc.state() == rdma::spec::cm_state::State::Established,
        "both ends still established",
    )?;
    check(
        !c.rb.has(EventKind::Disconnected)
            && !c.rb.has(EventKind::Rejected)
            && !c.ra.has(EventKind::Disconnected),
        "no event at either end",
    )?;
    c.data_flows(&client, &server)?;
    check(
        d == Snap {
            rx: 11,
            rx_req: 1,
            unknown: 7,
            unexpected: 2,
            dup_req: 1,
            dup_rep: 1,
            dup_rtu: 1,
            dup_dreq: 1,
            tx_rej: 0,
            tx_rtu: 1,
            tx_dreq: 0,
            tx_drep: 1,
        },
        "each message counted as the C CM would",
    )?;
    // A REQ from the same QP with a new ID: the peer lost the
    // connection; REJ STALE_CONN and rxb disconnects it.
    let s0 = Snap::take(&*counters(c)?);
    aim(c, "stale", &client, &server, |d| d.rx_req >= 1)?;
    c.rb.take(EventKind::Disconnected, 30)?;
    c.ra.take(EventKind::Disconnected, 30)?;
    let d = Snap::take(&*counters(c)?).since(s0);
    check(d.tx_rej == 1, "the stale REQ rejected")?;
    check(d.tx_dreq == 1, "rxb sent its DREQ")?;
    drop(client);
    drop(server);
    c.ra.clear();
    c.rb.clear();
    Ok(())
}

/// rxb holds the REQ (MRA delayed); hostile.sh's 4 messages; then it
/// accepts.
fn req_rcvd(c: &mut Option<Ctx>) -> Result {
    let c = ctx(c)?;
    let (client, server) = c.request()?;
    let d = aim(c, "req_rcvd", &client, &server, |d| d.rx >= 4)?;
    check(
        d.unknown == 2 && d.unexpected == 1 && d.dup_rtu == 1 && d.tx_rej == 0 && d.tx_drep == 0,
        "each message counted as the C CM would",
    )?;
    check(
        !c.ra.has(EventKind::Rejected) && !c.rb.has(EventKind::Rejected),
        "nobody rejected",
    )?;
    c.accept(&server)?;
    c.data_flows(&client, &server)?;
    client.disconnect()?;
    c.ra.take(EventKind::Disconnected, 20)?;
    c.rb.take(EventKind::Disconnected, 20)?;
    drop(client);
    drop(server);
    c.ra.clear();
    c.rb.clear();
    Ok(())
}

/// rxb is the active side and its REQ is held by a listener on rxa
/// (MRA delayed); hostile.sh's 4 messages with rxb's ID and another peer
/// ID (a REJ of something else than the REQ, an MRA of a REP, a DREQ, an
/// RTU) find no connection: the DREQ answered with a DREP. Then rxa
/// accepts: established, data flows from rxb to rxa.
fn req_sent(c: &mut Option<Ctx>) -> Result {
    let c = ctx(c)?;
    let listener = listen(&c.a, &c.ra, PORT + 1)?;
    let (client, server) = request_pair(
        (&c.b, &c.rb),
        (&c.a, &c.ra),
        SockAddr {
            ip: IpAddr::V4([10, 78, 3, 1]),
            port: PORT + 1,
        },
    )?;
    // An MRA from rxa (for a resent REQ) may come too: wait on the drops.
    let d = aim(c, "req_sent", &server, &client, |d| d.unknown >= 4)?;
    check(
        d.unknown == 4
            && d.unexpected == 0
            && d.dup_dreq == 1
            && d.tx_drep == 1
            && d.tx_rej == 0
            && d.dup_rtu == 0,
        "each message counted as the C CM would",
    )?;
    check(
        !c.ra.has(EventKind::Rejected) && !c.rb.has(EventKind::Rejected),
        "nobody rejected",
    )?;
    accept_pair(&server, &c.rb, &c.ra)?;
    send_arrives((&c.b, &c.rb, &client), (&c.a, &c.ra, &server))?;
    client.disconnect()?;
    c.ra.take(EventKind::Disconnected, 20)?;
    c.rb.take(EventKind::Disconnected, 20)?;
    drop(client);
    drop(server);
    drop(listener);
    c.ra.clear();
    c.rb.clear();
    Ok(())
}

const CASES: &[FnCase<Option<Ctx>>] = &[
    case!(established(_)),
    case!(req_rcvd(_)),
    case!(req_sent(_)),
];

struct RxeCmLiveTest;

impl kernel::Module for RxeCmLiveTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut c = None;
        let r = ktap::run(CASES, &mut c);
        drop(c);
        r?;
        Ok(RxeCmLiveTest)
    }
}
