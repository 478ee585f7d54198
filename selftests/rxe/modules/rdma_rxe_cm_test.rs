// SPDX-License-Identifier: GPL-2.0

//! Selftest: connections made by our rdma_cm, between our devices and
//! with the kernel's rdma_cm.
//!
//! `cm.sh` makes our `rxa` (10.84.0.1, namespace cma) and `rxb`
//! (10.84.0.2, namespace cmb) on a veth pair, and our `rxc` (10.85.0.2,
//! namespace cmc) facing the kernel's `cxc` (10.85.0.1, initial
//! namespace) on another. Every connection goes through the CM: address
//! and route resolution, REQ, REP, RTU, then verified traffic on the QPs
//! the CM moved to RTS, then DREQ/DREP and timewait; and the failures:
//! no listener (REJ 8), a consumer's reject with private data (REJ 28).
//! With the kernel's rdma_cm (the C endpoints of `rxe_cpeer`): our client
//! to its listener (it echoes our SEND; our RDMA WRITE lands in its
//! buffer) and its client to our listener (we echo its SEND).
//!
//! Service ID resolution (SIDR) on the CM itself: rxa resolves UDP
//! service IDs on rxb (accepted with QPN, Q_Key and private data; rejected;
//! a listener that takes no SIDR; nobody listening), against a silent peer
//! (timeout after the retries), against a listener that holds the request
//! (resends counted as duplicates, REJECT when dropped unanswered), and
//! cancelled while pending (no event); and rxc resolves udaddy's service
//! on the kernel's rdma_cm (started by `cm.sh`).

#![deny(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use kernel::c_str;
use kernel::error::code::{EAGAIN, EINVAL};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::cm::conn::{CmConn, ConnUser};
use rdma::cm::counters::Group;
use rdma::cm::port::CmPortShared;
use rdma::cm::sidr::{CmSidr, SidrEvent, SidrReqParams, SidrRequest, SidrUser};
use rdma::cm::table::{ListenUser, Listener};
use rdma::cma::{
    CmEvent, CmHandler, CmId, CmIdCore, ConnParam, Disposition, EventKind, IpAddr, SockAddr,
};
use rdma::kshim::time;
use rdma::mad::agent::AgentCore;
use rdma::mad::{Agent, MadAddr, MadHandler, RecvMad, SendOpts, SendStatus};
use rdma::spec::attr::Gid;
use rdma::spec::cm_msg::{tcp_service_id, CmMessage, Req, ReqPath, SidrReq, SidrStatus};
use rdma::spec::mad::{
    CM_ATTR_DREP, CM_ATTR_DREQ, CM_ATTR_MRA, CM_ATTR_REJ, CM_ATTR_REP, CM_ATTR_REQ, CM_ATTR_RTU,
    CM_ATTR_SIDR_REP, CM_ATTR_SIDR_REQ, MAD_SIZE,
};
use rdma::spec::opcodes::{Access, WcStatus};
use rdma::verbs::ah::{AhAttr, GlobalRoute};
use rdma::verbs::wr::{RecvWr, SendOp, SendWr};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/verify.rs"]
mod verify;

#[allow(dead_code)]
mod cpeer_sys;

#[path = "../../lib/rping.rs"]
#[allow(dead_code)]
mod rping;
use rping::{Ep, Rec, Recorder, BUF};

module! {
    type: RxeCmTest,
    name: "rdma_rxe_cm_test",
    author: "rdma-rs developers",
    description: "Selftest: rdma_cm connections, ours and the kernel's",
    license: "GPL",
}

fn v4(a: [u8; 4], port: u16) -> SockAddr {
    SockAddr {
        ip: IpAddr::V4(a),
        port,
    }
}

/// A client id on `side` resolved to `dst`, with its QP.
fn client(side: &Ep, rec: &Rec, dst: SockAddr) -> Result<CmId> {
    let id = CmId::new(side.ns()?, rec.0.clone())?;
    id.resolve_addr(None, dst)?;
    rec.take(EventKind::AddrResolved, 20)?;
    id.resolve_route()?;
    rec.take(EventKind::RouteResolved, 20)?;
    side.make_qp(&id)?;
    Ok(id)
}

fn param(data: &[u8]) -> Result<ConnParam> {
    let mut p = ConnParam {
        responder_resources: 1,
        initiator_depth: 1,
        retry_count: 7,
        rnr_retry_count: 7,
        ..ConnParam::default()
    };
    p.private_data.extend_from_slice(data, GFP_KERNEL)?;
    Ok(p)
}

/// Posts a receive of `len` bytes at `off` of `side`'s buffer on `id`'s QP.
fn post_recv(side: &Ep, id: &CmIdCore, off: usize, len: u32) -> Result {
    let qp = id.qp().ok_or(EINVAL)?;
    let sg = [side.buf.sge(off, len, side.mr.lkey())?];
    qp.post_recv(&[RecvWr {
        wr_id: 1,
        cqe: None,
        sg: &sg,
    }])
    .map_err(|(_, e)| e)
}

/// Posts a SEND of `len` bytes at `off`, or a WRITE to `remote`.
fn post_send(side: &Ep, id: &CmIdCore, off: usize, len: u32, remote: Option<(u64, u32)>) -> Result {
    let qp = id.qp().ok_or(EINVAL)?;
    let sg = [side.buf.sge(off, len, side.mr.lkey())?];
    let op = match remote {
        Some((remote_addr, rkey)) => SendOp::Write { remote_addr, rkey },
        None => SendOp::Send,
    };
    qp.post_send(&[SendWr::new(2, op, &sg)]).map_err(|(_, e)| e)
}

/// One completion of `side`'s CQ, successful.
fn completed(side: &Ep, what: &str) -> Result {
    let wc = verify::poll(&side.cq, 1)?;
    if wc[0].status != WcStatus::Success {
        pr_err!("{}: {:?}\n", what, wc[0].status);
    }
    check(wc[0].status == WcStatus::Success, what)
}

fn cm(side: &Ep, g: Group, attr: u16) -> u64 {
    rdma::cm::port::counters(&side.dev, 1).map_or(u64::MAX, |c| c.get(g, attr))
}

/// The private data of an accept: our buffer's address, key and length.
fn buffer_pdata(side: &Ep) -> [u8; 16] {
    let mut p = [0u8; 16];
    p[..8].copy_from_slice(&side.buf.addr(0).to_be_bytes());
    p[8..12].copy_from_slice(&side.mr.rkey().to_be_bytes());
    p[12..].copy_from_slice(&(BUF as u32).to_be_bytes());
    p
}

/// A MAD handler that takes nothing (the stale REQ's sender).
struct Nobody;

impl MadHandler for Nobody {
    fn recv(&self, _agent: &AgentCore, _mad: &RecvMad) {}

    fn send_done(&self, _agent: &AgentCore, _cookie: u64, _status: SendStatus) {}
}

/// Sends rxb's CM a REQ from rxa's QP `qpn` with a communication ID no
/// connection has, for port 5000, naming `to_gid` as rxb's GID.
fn forged_req(a: &Ep, qpn: u32, to_gid: Gid) -> Result {
    let agent = Agent::register(&a.dev, 1, 0x0a, 1, Arc::new(Nobody, GFP_KERNEL)?)?;
    let (src, dst) = (
        Gid::from_ipv4([10, 84, 0, 1]),
        Gid::from_ipv4([10, 84, 0, 2]),
    );
    let (_, index) = a.dev.find_gid_on_port(1, &src).ok_or(EINVAL)?;
    let req = Req {
        local_comm_id: 0x0057_a1e0,
        service_id: tcp_service_id(5000),
        local_ca_guid: a.dev.node_guid(),
        local_qpn: qpn,
        max_cm_retries: 15,
        primary_path: ReqPath {
            local_gid: src,
            remote_gid: to_gid,
            ..ReqPath::default()
        },
        ..Req::default()
    };
    let mut mad = [0u8; MAD_SIZE];
    CmMessage::Req(req)
        .write_mad(agent.new_tid(), 0, &mut mad)
        .map_err(|_| EINVAL)?;
    let to = MadAddr {
        ah: AhAttr {
            port_num: 1,
            grh: GlobalRoute {
                dgid: dst,
                sgid_index: index as u8,
                hop_limit: 64,
                ..GlobalRoute::default()
            },
            ..AhAttr::default()
        },
        remote_qpn: 1,
        pkey_index: 0,
    };
    agent.send(&to, &mad, SendOpts::default())
}

/// Ours to ours: rxa connects to a listener on rxb (private data both
/// ways), SENDs and WRITEs into the address the accept gave, then
/// disconnects; both sides see every event, the counters say what went.
fn ours_to_ours() -> Result {
    let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
    let (ra, rb) = (Recorder::make()?, Recorder::make()?);
    let listener = CmId::new(b.ns()?, rb.0.clone())?;
    listener.bind_addr(v4([0; 4], 5000))?;
    listener.listen()?;
    let req0 = cm(&b, Group::RxMsgs, CM_ATTR_REQ);
    let id = client(&a, &ra, v4([10, 84, 0, 2], 5000))?;
    id.connect(&param(b"hello")?)?;
    let mut ev = rb.take(EventKind::ConnectRequest, 20)?;
    check(
        ev.private_data.len() == 56 && ev.private_data[..5] == *b"hello",
        "the REQ's private data",
    )?;
    check(
        ev.param.responder_resources == 1 && ev.param.initiator_depth == 1,
        "the offer",
    )?;
    let server = ev.new_id.take().ok_or(EINVAL)?;
    check(
        server
            .dst_addr()
            .is_some_and(|d| d.ip == IpAddr::V4([10, 84, 0, 1])),
        "the peer's address from the rdma_cm header",
    )?;
    b.make_qp(&server)?;
    post_recv(&b, &server, 0, 4096)?;
    server.accept(&param(&buffer_pdata(&b))?)?;
    let est = ra.take(EventKind::Established, 20)?;
    check(
        est.private_data.len() == 196,
        "the REP's private data, all of it",
    )?;
    rb.take(EventKind::Established, 20)?;
    let mut rkey = [0u8; 4];
    rkey.copy_from_slice(&est.private_data[8..12]);
    let mut addr = [0u8; 8];
    addr.copy_from_slice(&est.private_data[..8]);
    // SEND a to b.
    verify::fill_pattern(&a.buf, 0, 1000, 7)?;
    post_send(&a, &id, 0, 1000, None)?;
    completed(&a, "the SEND completed")?;
    completed(&b, "the SEND arrived")?;
    check(
        verify::same(&a.buf, 0, &b.buf, 0, 1000)?,
        "the SEND's bytes",
    )?;
    // WRITE a to b's buffer at 8 KiB.
    verify::fill_pattern(&a.buf, 4096, 3000, 8)?;
    post_send(
        &a,
        &id,
        4096,
        3000,
        Some((u64::from_be_bytes(addr) + 8192, u32::from_be_bytes(rkey))),
    )?;
    completed(&a, "the WRITE completed")?;
    check(
        verify::same(&a.buf, 4096, &b.buf, 8192, 3000)?,
        "the WRITE's bytes",
    )?;
    // A new REQ from the client's QP while its connection lives (forged
    // through a MAD agent of rxa): rxb's CM rejects it as stale and the
    // listener never hears of it; the connection still carries data.
    let rej0 = cm(&b, Group::TxMsgs, CM_ATTR_REJ);
    let qpn = id.qp().ok_or(EINVAL)?.qpn();
    forged_req(&a, qpn, Gid::from_ipv4([10, 84, 0, 2]))?;
    // And a REQ (from another QP) for a GID rxb does not have: rejected
    // with INVALID_GID, and no connection request either.
    forged_req(&a, qpn + 0x1000, Gid::from_ipv4([10, 84, 0, 77]))?;
    for _ in 0..500 {
        if cm(&b, Group::TxMsgs, CM_ATTR_REJ) >= rej0 + 2 {
            break;
        }
        time::msleep(10);
    }
    check(
        cm(&b, Group::TxMsgs, CM_ATTR_REJ) == rej0 + 2,
        "the stale REQ and the one for a GID not ours rejected",
    )?;
    time::msleep(200);
    check(
        !rb.seen
            .lock()
            .iter()
            .any(|e| e.kind == EventKind::ConnectRequest),
        "no connection request for either",
    )?;
    post_recv(&b, &server, 0, 4096)?;
    post_send(&a, &id, 0, 100, None)?;
    completed(&a, "a SEND after the stale REQ")?;
    completed(&b, "it arrived")?;
    // Disconnect from the client.
    id.disconnect()?;
    ra.take(EventKind::Disconnected, 20)?;
    rb.take(EventKind::Disconnected, 20)?;
    ra.take(EventKind::TimewaitExit, 20)?;
    rb.take(EventKind::TimewaitExit, 20)?;
    check(
        cm(&b, Group::RxMsgs, CM_ATTR_REQ) == req0 + 3,
        "the REQ and the two forged ones",
    )?;
    check(
        cm(&a, Group::RxMsgs, CM_ATTR_REP) >= 1
            && cm(&b, Group::RxMsgs, CM_ATTR_RTU) >= 1
            && cm(&b, Group::RxMsgs, CM_ATTR_DREQ) >= 1
            && cm(&a, Group::RxMsgs, CM_ATTR_DREP) >= 1,
        "REP, RTU, DREQ and DREP went",
    )?;
    drop(server);
    drop(id);
    drop(listener);
    Ok(())
}

/// The rights a connection's QP grants its peer are those of the C stack
/// (ib_cm's INIT attributes, which rdma_cm applies before RTR):
/// REMOTE_WRITE always, REMOTE_READ and REMOTE_ATOMIC only with responder
/// resources. rxb accepts with none, then with one; rxa, whose responder
/// resources are rxb's initiator depth (1), grants all three both times.
/// rxa READs rxb's buffer: a remote access error without, the bytes with.
fn read_needs_responder_resources() -> Result {
    let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    for rr in [0u8, 1] {
        let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
        let (ra, rb) = (Recorder::make()?, Recorder::make()?);
        let listener = CmId::new(b.ns()?, rb.0.clone())?;
        listener.bind_addr(v4([0; 4], 5010))?;
        listener.listen()?;
        let id = client(&a, &ra, v4([10, 84, 0, 2], 5010))?;
        id.connect(&param(b"rr")?)?;
        let mut ev = rb.take(EventKind::ConnectRequest, 20)?;
        let server = ev.new_id.take().ok_or(EINVAL)?;
        b.make_qp(&server)?;
        let mut p = param(&buffer_pdata(&b))?;
        p.responder_resources = rr;
        server.accept(&p)?;
        ra.take(EventKind::Established, 20)?;
        rb.take(EventKind::Established, 20)?;
        let granted = server.qp().ok_or(EINVAL)?.query()?.qp_access_flags;
        let theirs = id.qp().ok_or(EINVAL)?.query()?.qp_access_flags;
        pr_info!(
            "cm: responder resources {}: rxb grants {:?}, rxa {:?}\n",
            rr,
            granted,
            theirs
        );
        let want = if rr > 0 { all } else { Access::REMOTE_WRITE };
        check(granted == want, "rxb's QP grants what its resources allow")?;
        check(theirs == all, "rxa's QP grants all three")?;
        verify::fill_pattern(&b.buf, 8192, 512, 9)?;
        let remote = (b.buf.addr(8192), b.mr.rkey());
        a.rdma(&id, false, 0, 512, remote)?;
        let wc = verify::poll(&a.cq, 1)?;
        pr_info!(
            "cm: READ with {} responder resources: {:?}\n",
            rr,
            wc[0].status
        );
        if rr > 0 {
            check(wc[0].status == WcStatus::Success, "the READ completed")?;
            check(
                verify::same(&a.buf, 0, &b.buf, 8192, 512)?,
                "the READ's bytes",
            )?;
        } else {
            // The QP does not grant remote read: an invalid request, as
            // the C rxe answers it (its unsupported opcode, class C).
            check(
                wc[0].status == WcStatus::RemInvReqErr,
                "a READ without responder resources: remote invalid request",
            )?;
        }
        id.disconnect()?;
        ra.take(EventKind::Disconnected, 20)?;
        rb.take(EventKind::Disconnected, 20)?;
        drop(server);
        drop(id);
        drop(listener);
    }
    Ok(())
}

/// A listener's handler that takes its time over each connection request
/// (refusing it), says while it is inside, and notes any request it is
/// still in, or gets, after its listener's destroy returned.
struct Slow {
    inside: AtomicBool,
    calls: AtomicU32,
    gone: AtomicBool,
    late: AtomicU32,
}

impl CmHandler for Slow {
    fn event(&self, _id: &Arc<CmIdCore>, ev: CmEvent) -> Disposition {
        if ev.kind != EventKind::ConnectRequest {
            return Disposition::Keep;
        }
        if self.gone.load(Ordering::Acquire) {
            self.late.fetch_add(1, Ordering::Relaxed);
        }
        self.inside.store(true, Ordering::Release);
        self.calls.fetch_add(1, Ordering::Relaxed);
        time::msleep(20);
        if self.gone.load(Ordering::Acquire) {
            self.late.fetch_add(1, Ordering::Relaxed);
        }
        self.inside.store(false, Ordering::Release);
        // The new id goes with the event: the CM rejects the request.
        Disposition::Destroy
    }
}

/// Listeners destroyed as requests come, sixteen times: half while a
/// request is in the handler (the destroy waits for it to return), half
/// as the REQ is on its way (a request reported after the destroy is
/// rejected, never handed over). No handler runs after its listener's
/// destroy returned, and every client hears a REJ.
fn listener_destroyed_under_requests() -> Result {
    let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
    let mut handed = 0;
    for i in 0..16u32 {
        let slow = Arc::new(
            Slow {
                inside: AtomicBool::new(false),
                calls: AtomicU32::new(0),
                gone: AtomicBool::new(false),
                late: AtomicU32::new(0),
            },
            GFP_KERNEL,
        )?;
        let listener = CmId::new(b.ns()?, slow.clone())?;
        listener.bind_addr(v4([0; 4], 5020))?;
        listener.listen()?;
        let ra = Recorder::make()?;
        let id = client(&a, &ra, v4([10, 84, 0, 2], 5020))?;
        id.connect(&param(b"late")?)?;
        if i % 2 == 0 {
            for _ in 0..500 {
                if slow.inside.load(Ordering::Acquire) {
                    break;
                }
                time::msleep(10);
            }
            check(
                slow.inside.load(Ordering::Acquire),
                "the request reached the handler",
            )?;
        } else {
            time::msleep(i % 5);
        }
        drop(listener);
        slow.gone.store(true, Ordering::Release);
        time::msleep(60);
        let late = slow.late.load(Ordering::Relaxed);
        if late != 0 {
            pr_err!(
                "cm: round {}: {} handler calls after the destroy\n",
                i,
                late
            );
        }
        check(
            late == 0 && !slow.inside.load(Ordering::Acquire),
            "no handler after its listener's destroy returned",
        )?;
        ra.take(EventKind::Rejected, 20)?;
        handed += slow.calls.load(Ordering::Relaxed);
        drop(id);
    }
    pr_info!(
        "cm: 16 listeners destroyed under requests, {} handed over\n",
        handed
    );
    check(handed >= 8, "the requests waited for reached the handler")
}

/// Loss and duplicates on the wire, by rxb's fault injection (cm.sh arms
/// it before the first case: the first packet rxb receives is dropped,
/// the second duplicated, the fourth dropped): our first REQ is lost and
/// sent again after its timeout; that one arrives twice, and the second
/// is a duplicate the passive side drops; after the RTU, our DREQ is lost
/// and sent again, and both sides still end disconnected.
fn lost_and_duplicated() -> Result {
    let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
    let (ra, rb) = (Recorder::make()?, Recorder::make()?);
    let listener = CmId::new(b.ns()?, rb.0.clone())?;
    listener.bind_addr(v4([0; 4], 5010))?;
    listener.listen()?;
    let re0 = [
        cm(&a, Group::TxRetries, CM_ATTR_REQ),
        cm(&a, Group::TxRetries, CM_ATTR_DREQ),
    ];
    let dup0 = cm(&b, Group::RxDuplicates, CM_ATTR_REQ);
    let id = client(&a, &ra, v4([10, 84, 0, 2], 5010))?;
    let mut p = param(b"through loss")?;
    p.cm_response_timeout = Some(8);
    id.connect(&p)?;
    let mut ev = rb.take(EventKind::ConnectRequest, 20)?;
    let server = ev.new_id.take().ok_or(EINVAL)?;
    b.make_qp(&server)?;
    server.accept(&param(b"ok")?)?;
    ra.take(EventKind::Established, 20)?;
    rb.take(EventKind::Established, 20)?;
    check(
        cm(&a, Group::TxRetries, CM_ATTR_REQ) == re0[0] + 1,
        "the lost REQ sent again",
    )?;
    check(
        cm(&b, Group::RxDuplicates, CM_ATTR_REQ) == dup0 + 1,
        "the duplicated REQ dropped as a duplicate",
    )?;
    check(rb.seen.lock().is_empty(), "one connection request only")?;
    id.disconnect()?;
    ra.take(EventKind::Disconnected, 20)?;
    rb.take(EventKind::Disconnected, 20)?;
    check(
        cm(&a, Group::TxRetries, CM_ATTR_DREQ) == re0[1] + 1,
        "the lost DREQ sent again",
    )?;
    drop(server);
    drop(listener);
    Ok(())
}

/// The listener's owner takes its time: the REQ's event passes without an
/// accept, so the CM arms a delayed MRA; the client's REQ times out (short
/// timers) and comes again, and that duplicate is answered with an MRA,
/// after which the client waits instead of resending; the late accept
/// then connects.
fn slow_accept_mra() -> Result {
    let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
    let (ra, rb) = (Recorder::make()?, Recorder::make()?);
    let listener = CmId::new(b.ns()?, rb.0.clone())?;
    listener.bind_addr(v4([0; 4], 5011))?;
    listener.listen()?;
    let (mra_tx0, mra_rx0, re0) = (
        cm(&b, Group::TxMsgs, CM_ATTR_MRA),
        cm(&a, Group::RxMsgs, CM_ATTR_MRA),
        cm(&a, Group::TxRetries, CM_ATTR_REQ),
    );
    let id = client(&a, &ra, v4([10, 84, 0, 2], 5011))?;
    let mut p = param(b"take your time")?;
    p.cm_response_timeout = Some(18);
    id.connect(&p)?;
    let mut ev = rb.take(EventKind::ConnectRequest, 20)?;
    let server = ev.new_id.take().ok_or(EINVAL)?;
    // The REQ's timeout is about 1.5 s: its resend comes.
    for _ in 0..1000 {
        if cm(&a, Group::RxMsgs, CM_ATTR_MRA) > mra_rx0 {
            break;
        }
        time::msleep(10);
    }
    check(
        cm(&b, Group::TxMsgs, CM_ATTR_MRA) > mra_tx0,
        "the duplicate REQ answered with an MRA",
    )?;
    check(
        cm(&a, Group::RxMsgs, CM_ATTR_MRA) > mra_rx0,
        "the MRA arrived",
    )?;
    let retries = cm(&a, Group::TxRetries, CM_ATTR_REQ);
    check(retries > re0, "the REQ was resent")?;
    // The MRA stretched the client's wait: no more resends.
    time::msleep(1500);
    check(
        cm(&a, Group::TxRetries, CM_ATTR_REQ) == retries,
        "no resend after the MRA",
    )?;
    b.make_qp(&server)?;
    server.accept(&param(b"finally")?)?;
    ra.take(EventKind::Established, 20)?;
    rb.take(EventKind::Established, 20)?;
    id.disconnect()?;
    ra.take(EventKind::Disconnected, 20)?;
    rb.take(EventKind::Disconnected, 20)?;
    drop(server);
    drop(listener);
    Ok(())
}

/// Nobody listens on the port: REJECTED with reason 8.
fn no_listener() -> Result {
    let a = Ep::new(c_str!("rxa"))?;
    let ra = Recorder::make()?;
    let id = client(&a, &ra, v4([10, 84, 0, 2], 5999))?;
    id.connect(&param(b"anyone?")?)?;
    let ev = ra.take(EventKind::Rejected, 20)?;
    check(ev.status == 8, "INVALID_SERVICE_ID")
}

/// The listener's owner rejects, with private data: the client sees
/// REJECTED, reason 28, and the data.
fn consumer_reject() -> Result {
    let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
    let (ra, rb) = (Recorder::make()?, Recorder::make()?);
    let listener = CmId::new(b.ns()?, rb.0.clone())?;
    listener.bind_addr(v4([10, 84, 0, 2], 5002))?;
    listener.listen()?;
    let id = client(&a, &ra, v4([10, 84, 0, 2], 5002))?;
    id.connect(&param(b"let me in")?)?;
    let mut ev = rb.take(EventKind::ConnectRequest, 20)?;
    let server = ev.new_id.take().ok_or(EINVAL)?;
    server.reject(b"go away")?;
    let ev = ra.take(EventKind::Rejected, 20)?;
    check(ev.status == 28, "CONSUMER_DEFINED")?;
    check(
        ev.private_data.len() == 148 && ev.private_data[..7] == *b"go away",
        "the REJ's private data",
    )?;
    drop(server);
    drop(listener);
    Ok(())
}

/// A peer that never answers: the REQ goes to an address whose neighbour
/// entry (cm.sh sets it) names a MAC nobody has; with a short CM response
/// timeout and two retries the REQ is sent three times and the id sees
/// UNREACHABLE (-ETIMEDOUT), as rdma_cm reports it.
fn unreachable() -> Result {
    let a = Ep::new(c_str!("rxa"))?;
    let ra = Recorder::make()?;
    let tx0 = cm(&a, Group::TxMsgs, CM_ATTR_REQ);
    let re0 = cm(&a, Group::TxRetries, CM_ATTR_REQ);
    let id = client(&a, &ra, v4([10, 84, 0, 99], 5000))?;
    let mut p = param(b"hello?")?;
    p.cm_response_timeout = Some(8);
    p.max_cm_retries = Some(2);
    id.connect(&p)?;
    let ev = ra.take(EventKind::Unreachable, 20)?;
    check(ev.status == -110, "ETIMEDOUT")?;
    check(
        cm(&a, Group::TxMsgs, CM_ATTR_REQ) == tx0 + 1
            && cm(&a, Group::TxRetries, CM_ATTR_REQ) == re0 + 2,
        "one REQ and two retries",
    )
}

/// A listener destroyed while a connection request waits in its queue
/// (the new id never taken): the request is rejected, the client sees
/// REJECTED, and nothing is left.
fn listener_destroyed_with_pending() -> Result {
    let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
    let (ra, rb) = (Recorder::make()?, Recorder::make()?);
    let listener = CmId::new(b.ns()?, rb.0.clone())?;
    listener.bind_addr(v4([0; 4], 5003))?;
    listener.listen()?;
    let id = client(&a, &ra, v4([10, 84, 0, 2], 5003))?;
    id.connect(&param(b"pending")?)?;
    let ev = rb.take(EventKind::ConnectRequest, 20)?;
    drop(listener);
    // The request's new id goes with its event, untaken: rejected.
    drop(ev);
    let ev = ra.take(EventKind::Rejected, 20)?;
    check(ev.status == 28, "rejected by the consumer's side")
}

/// Our client to the kernel's rdma_cm listener (rxe_cpeer): it echoes
/// our SEND, and our WRITE lands in the buffer its accept gave.
fn ours_to_c() -> Result {
    let c = Ep::new(c_str!("rxc"))?;
    let peer = cpeer_sys::CmPeer::listen(&cpeer_sys::cm_v4([0, 0, 0, 0]), 6000, 65536)?;
    let rc = Recorder::make()?;
    let id = client(&c, &rc, v4([10, 85, 0, 1], 6000))?;
    id.connect(&param(b"from rust")?)?;
    let est = rc.take(EventKind::Established, 20)?;
    // The C side is established when our RTU arrives.
    let mut info = peer.info()?;
    for _ in 0..1000 {
        if info.established >= 1 {
            break;
        }
        time::msleep(10);
        info = peer.info()?;
    }
    check(info.established >= 1, "the C side established")?;
    check(
        info.pdata()[..9] == *b"from rust",
        "the C side got our private data",
    )?;
    let mut f = [0u8; 8];
    f.copy_from_slice(&est.private_data[..8]);
    let raddr = u64::from_be_bytes(f);
    let mut k = [0u8; 4];
    k.copy_from_slice(&est.private_data[8..12]);
    let rkey = u32::from_be_bytes(k);
    // SEND, echoed back.
    post_recv(&c, &id, 8192, 256)?;
    verify::fill_pattern(&c.buf, 0, 200, 9)?;
    post_send(&c, &id, 0, 200, None)?;
    completed(&c, "the SEND completed")?;
    completed(&c, "the echo arrived")?;
    check(
        verify::same(&c.buf, 0, &c.buf, 8192, 200)?,
        "the echo's bytes",
    )?;
    // WRITE into its buffer.
    verify::fill_pattern(&c.buf, 4096, 1500, 10)?;
    post_send(&c, &id, 4096, 1500, Some((raddr + 100, rkey)))?;
    completed(&c, "the WRITE completed")?;
    let mut theirs = [0u8; 1500];
    peer.read_buf(100, &mut theirs)?;
    let mut ours = [0u8; 1500];
    c.buf.read(4096, &mut ours)?;
    check(theirs == ours, "the WRITE's bytes in the C buffer")?;
    id.disconnect()?;
    rc.take(EventKind::Disconnected, 20)?;
    drop(id);
    drop(peer);
    Ok(())
}

/// The kernel's rdma_cm client (rxe_cpeer) to our listener: we accept
/// with private data, echo its SEND; it disconnects.
fn c_to_ours() -> Result {
    let c = Ep::new(c_str!("rxc"))?;
    let rs = Recorder::make()?;
    let listener = CmId::new(c.ns()?, rs.0.clone())?;
    listener.bind_addr(v4([0; 4], 6001))?;
    listener.listen()?;
    // The C client connects and blocks until established: it runs on a
    // helper thread of the kernel (the work of the C module) while we
    // accept here; its connect waits for our accept.
    let done = Arc::pin_init(
        pin_init!(Connecting {
            out <- new_mutex!(None, "Connecting::out"),
        }),
        GFP_KERNEL,
    )?;
    let d2 = done.clone();
    let w = Arc::pin_init(
        pin_init!(ConnectWork {
            done: d2,
            work <- kernel::new_work!("ConnectWork::work"),
        }),
        GFP_KERNEL,
    )?;
    let _ = kernel::workqueue::system_unbound().enqueue(w);
    let mut ev = rs.take(EventKind::ConnectRequest, 20)?;
    check(
        ev.private_data[..7] == *b"from c!",
        "the C client's private data",
    )?;
    let server = ev.new_id.take().ok_or(EINVAL)?;
    c.make_qp(&server)?;
    post_recv(&c, &server, 0, 256)?;
    server.accept(&param(&buffer_pdata(&c))?)?;
    rs.take(EventKind::Established, 20)?;
    let mut peer = None;
    for _ in 0..2000 {
        if let Some(p) = done.out.lock().take() {
            peer = Some(p);
            break;
        }
        time::msleep(10);
    }
    let peer = peer.ok_or(EAGAIN)??;
    let info = peer.info()?;
    check(
        info.remote_len == BUF as u32,
        "the C client decoded our accept's private data",
    )?;
    peer.send(b"ping from the kernel's rdma_cm")?;
    completed(&c, "its SEND arrived")?;
    post_send(&c, &server, 0, 30, None)?;
    completed(&c, "the echo went")?;
    let mut back = [0u8; 64];
    let n = peer.recv(&mut back, 10_000)?;
    check(
        n == 30 && back[..30] == *b"ping from the kernel's rdma_cm",
        "the echo's bytes",
    )?;
    peer.disconnect(10_000)?;
    rs.take(EventKind::Disconnected, 20)?;
    drop(peer);
    drop(server);
    drop(listener);
    Ok(())
}

/// rxa is removed under a connected id (cm.sh disables it when this
/// case prints that it is ready): the id gets DEVICE_REMOVAL, the core
/// lets go of its QP and device and the id is unusable; the test then
/// lets go of rxa too, and the unregistration completes. (The DREQ the
/// CM sends then need not reach the peer: rxe stops sending when it is
/// disabled, before the device is unregistered; the peer's side is
/// destroyed without waiting for it.)
fn device_removed_under_connection() -> Result {
    let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
    let (ra, rb) = (Recorder::make()?, Recorder::make()?);
    let listener = CmId::new(b.ns()?, rb.0.clone())?;
    listener.bind_addr(v4([0; 4], 5020))?;
    listener.listen()?;
    let id = client(&a, &ra, v4([10, 84, 0, 2], 5020))?;
    id.connect(&param(b"soon gone")?)?;
    let mut ev = rb.take(EventKind::ConnectRequest, 20)?;
    let server = ev.new_id.take().ok_or(EINVAL)?;
    b.make_qp(&server)?;
    server.accept(&param(b"ok")?)?;
    ra.take(EventKind::Established, 20)?;
    rb.take(EventKind::Established, 20)?;
    pr_info!("cm: ready for removal of rxa\n");
    for _ in 0..6000 {
        if ra
            .seen
            .lock()
            .iter()
            .any(|e| e.kind == EventKind::DeviceRemoval)
        {
            break;
        }
        time::msleep(10);
    }
    ra.take(EventKind::DeviceRemoval, 20)?;
    // Our own objects on rxa hold it: they go now.
    drop(a);
    let mut released = false;
    for _ in 0..1000 {
        if id.qp().is_none() && id.device().is_none() {
            released = true;
            break;
        }
        time::msleep(10);
    }
    check(released, "the id let go of its QP and device")?;
    check(id.connect(&param(b"again")?).is_err(), "the id is unusable")?;
    drop(id);
    drop(server);
    drop(listener);
    Ok(())
}

/// The outcome of the C client's connect.
#[pin_data]
struct Connecting {
    #[pin]
    out: Mutex<Option<Result<cpeer_sys::CmPeer>>>,
}

/// Runs the C client's (blocking) connect.
#[pin_data]
struct ConnectWork {
    done: Arc<Connecting>,
    #[pin]
    work: kernel::workqueue::Work<ConnectWork>,
}

kernel::impl_has_work! {
    impl HasWork<Self> for ConnectWork { self.work }
}

impl kernel::workqueue::WorkItem for ConnectWork {
    type Pointer = Arc<ConnectWork>;

    fn run(this: Arc<ConnectWork>) {
        let r = cpeer_sys::CmPeer::connect(
            &cpeer_sys::cm_v4([10, 85, 0, 2]),
            6001,
            b"from c!",
            65536,
            30_000,
        )
        .and_then(|c| c.established());
        *this.done.out.lock() = Some(r);
    }
}

/// How a SIDR listener of the tests answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SidrMode {
    /// SUCCESS, QPN 0x1234, Q_Key 0x01234567, private data "welcome".
    Accept,
    /// REJECT, private data "no".
    Reject,
    /// Takes no SIDR REQ (a connected-mode listener).
    Refuse,
    /// Keeps the request unanswered (the peer's REQ is resent).
    Hold,
}

/// A listener of the CM itself, for SIDR.
#[pin_data]
struct SidrListen {
    mode: SidrMode,
    #[pin]
    seen: Mutex<KVec<Arc<SidrRequest>>>,
    count: AtomicU32,
}

impl ListenUser for SidrListen {
    fn takes(&self, _port: &CmPortShared, _req: &Req) -> bool {
        false
    }

    fn on_req(
        &self,
        _port: &Arc<CmPortShared>,
        _conn: &Arc<CmConn>,
        _req: &Req,
        _from: &MadAddr,
    ) -> Result<Arc<dyn ConnUser>> {
        Err(EINVAL)
    }

    fn takes_sidr(&self, _port: &CmPortShared, _req: &SidrReq) -> bool {
        self.mode != SidrMode::Refuse
    }

    fn on_sidr_req(&self, req: Arc<SidrRequest>) -> Result {
        self.count.fetch_add(1, Ordering::Relaxed);
        match self.mode {
            SidrMode::Accept => {
                if req.private_data()[..5] != *b"hello" {
                    pr_err!("sidr: the REQ's private data is not ours\n");
                    return Err(EINVAL);
                }
                req.sidr_reply(SidrStatus::Success, 0x1234, 0x0123_4567, b"welcome")?;
                // Once only.
                if req.sidr_reply(SidrStatus::Success, 1, 1, &[]) != Err(EINVAL) {
                    pr_err!("sidr: a second answer went\n");
                    return Err(EINVAL);
                }
                Ok(())
            }
            SidrMode::Reject => req.sidr_reply(SidrStatus::Reject, 0, 0, b"no"),
            SidrMode::Refuse => Err(EINVAL),
            SidrMode::Hold => Ok(self.seen.lock().push(req, GFP_KERNEL)?),
        }
    }
}

/// A SIDR REQ's user that records its events.
#[pin_data]
struct SidrRec {
    #[pin]
    evs: Mutex<KVec<SidrEvent>>,
}

impl SidrUser for SidrRec {
    fn sidr_event(&self, ev: SidrEvent) {
        let _ = self.evs.lock().push(ev, GFP_KERNEL);
    }
}

impl SidrRec {
    fn make() -> Result<Arc<SidrRec>> {
        Arc::pin_init(
            pin_init!(SidrRec {
                evs <- new_mutex!(KVec::new()),
            }),
            GFP_KERNEL,
        )
    }

    /// The one event, within `secs` seconds.
    fn take(&self, secs: u32) -> Result<SidrEvent> {
        for _ in 0..secs * 100 {
            if let Some(ev) = self.evs.lock().first() {
                return Ok(*ev);
            }
            time::msleep(10);
        }
        pr_err!("sidr: no event\n");
        Err(EAGAIN)
    }

    fn count(&self) -> usize {
        self.evs.lock().len()
    }
}

fn sidr_listener(service_id: u64, mode: SidrMode) -> Result<(Arc<SidrListen>, Listener)> {
    let l = Arc::pin_init(
        pin_init!(SidrListen {
            mode,
            seen <- new_mutex!(KVec::new()),
            count: AtomicU32::new(0),
        }),
        GFP_KERNEL,
    )?;
    let reg = Listener::new(service_id, l.clone())?;
    Ok((l, reg))
}

/// The CM at `dst`, as the SIDR REQs of `a` (at `src`) address it.
fn cm_at(a: &Ep, src: [u8; 4], dst: [u8; 4]) -> Result<MadAddr> {
    let (_, index) = a
        .dev
        .find_gid_on_port(1, &Gid::from_ipv4(src))
        .ok_or(EINVAL)?;
    Ok(MadAddr {
        ah: AhAttr {
            port_num: 1,
            grh: GlobalRoute {
                dgid: Gid::from_ipv4(dst),
                sgid_index: index as u8,
                hop_limit: 64,
                ..GlobalRoute::default()
            },
            ..AhAttr::default()
        },
        remote_qpn: 1,
        pkey_index: 0,
    })
}

/// A UDP port space service ID.
fn udp_service_id(port: u16) -> u64 {
    rdma::spec::cm_msg::RDMA_IB_IP_PS_UDP | u64::from(port)
}

fn sidr_send(
    a: &Ep,
    to: &MadAddr,
    service_id: u64,
    timeout_ms: u32,
    retries: u8,
) -> Result<(CmSidr, Arc<SidrRec>)> {
    sidr_send_data(a, to, service_id, timeout_ms, retries, b"hello")
}

fn sidr_send_data(
    a: &Ep,
    to: &MadAddr,
    service_id: u64,
    timeout_ms: u32,
    retries: u8,
    private_data: &[u8],
) -> Result<(CmSidr, Arc<SidrRec>)> {
    let port = rdma::cm::port::shared(&a.dev, 1).ok_or(EINVAL)?;
    let rec = SidrRec::make()?;
    let s = CmSidr::send_req(
        &port,
        to,
        &SidrReqParams {
            service_id,
            pkey: 0xffff,
            private_data,
            timeout_ms,
            max_retries: retries,
        },
        rec.clone(),
    )?;
    Ok((s, rec))
}

/// SIDR between our CMs: rxa resolves a UDP service ID on rxb, whose
/// listener answers with its QPN, Q_Key and private data; then a
/// listener that rejects (REJECT, with its private data), one that
/// refuses SIDR (REJECT), none (UNSUPPORTED). The counters of both
/// sides say what went.
fn sidr_ours_to_ours() -> Result {
    let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
    let to = cm_at(&a, [10, 84, 0, 1], [10, 84, 0, 2])?;
    let tx0 = cm(&a, Group::TxMsgs, CM_ATTR_SIDR_REQ);
    let rx0 = cm(&b, Group::RxMsgs, CM_ATTR_SIDR_REQ);
    let rep0 = cm(&b, Group::TxMsgs, CM_ATTR_SIDR_REP);
    let arx0 = cm(&a, Group::RxMsgs, CM_ATTR_SIDR_REP);

    let (l, _reg) = sidr_listener(udp_service_id(7001), SidrMode::Accept)?;
    let (s, rec) = sidr_send(&a, &to, udp_service_id(7001), 1000, 3)?;
    let SidrEvent::Rep(r) = rec.take(20)? else {
        return check(false, "SIDR REP, not a timeout");
    };
    check(
        r.status == 0 && r.qpn == 0x1234 && r.qkey == 0x0123_4567,
        "status SUCCESS, the QPN and Q_Key",
    )?;
    check(r.private_data[..7] == *b"welcome", "the REP's private data")?;
    check(
        l.count.load(Ordering::Relaxed) == 1,
        "the listener saw it once",
    )?;
    drop(s);

    let (_l, _reg) = sidr_listener(udp_service_id(7002), SidrMode::Reject)?;
    let (_s, rec) = sidr_send(&a, &to, udp_service_id(7002), 1000, 3)?;
    let SidrEvent::Rep(r) = rec.take(20)? else {
        return check(false, "rejected: SIDR REP");
    };
    check(
        r.status == 2 && r.private_data[..2] == *b"no",
        "REJECT, data",
    )?;

    let (_l, _reg) = sidr_listener(udp_service_id(7003), SidrMode::Refuse)?;
    let (_s, rec) = sidr_send(&a, &to, udp_service_id(7003), 1000, 3)?;
    let SidrEvent::Rep(r) = rec.take(20)? else {
        return check(false, "refused: SIDR REP");
    };
    check(r.status == 2, "a listener that takes no SIDR: REJECT")?;

    let (_s, rec) = sidr_send(&a, &to, udp_service_id(7004), 1000, 3)?;
    let SidrEvent::Rep(r) = rec.take(20)? else {
        return check(false, "no listener: SIDR REP");
    };
    check(r.status == 1, "no listener: UNSUPPORTED")?;
    check(rec.count() == 1, "one event")?;
    check(
        cm(&a, Group::TxMsgs, CM_ATTR_SIDR_REQ) == tx0 + 4
            && cm(&b, Group::RxMsgs, CM_ATTR_SIDR_REQ) == rx0 + 4
            && cm(&b, Group::TxMsgs, CM_ATTR_SIDR_REP) == rep0 + 4
            && cm(&a, Group::RxMsgs, CM_ATTR_SIDR_REP) == arx0 + 4,
        "four SIDR REQs and four SIDR REPs counted both sides",
    )
}

/// A SIDR REQ nobody answers (its neighbour's MAC is nobody's): sent
/// once and twice again, then a timeout; and one whose listener holds it
/// unanswered: its resends are duplicates (counted, not given to the
/// listener again), and when the listener's user drops it, it is answered
/// REJECT. A SIDR REQ dropped while pending gets no event.
fn sidr_timeout_duplicates_cancel() -> Result {
    let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
    let tx0 = cm(&a, Group::TxMsgs, CM_ATTR_SIDR_REQ);
    let re0 = cm(&a, Group::TxRetries, CM_ATTR_SIDR_REQ);
    let nowhere = cm_at(&a, [10, 84, 0, 1], [10, 84, 0, 99])?;
    let (_s, rec) = sidr_send(&a, &nowhere, udp_service_id(7005), 100, 2)?;
    check(matches!(rec.take(20)?, SidrEvent::Timeout), "timeout")?;
    check(
        cm(&a, Group::TxMsgs, CM_ATTR_SIDR_REQ) == tx0 + 1
            && cm(&a, Group::TxRetries, CM_ATTR_SIDR_REQ) == re0 + 2,
        "one SIDR REQ and two retries",
    )?;

    let to = cm_at(&a, [10, 84, 0, 1], [10, 84, 0, 2])?;
    let dup0 = cm(&b, Group::RxDuplicates, CM_ATTR_SIDR_REQ);
    let (l, reg) = sidr_listener(udp_service_id(7006), SidrMode::Hold)?;
    let (s, rec) = sidr_send(&a, &to, udp_service_id(7006), 100, 20)?;
    for _ in 0..200 {
        if cm(&b, Group::RxDuplicates, CM_ATTR_SIDR_REQ) >= dup0 + 2 {
            break;
        }
        time::msleep(10);
    }
    check(
        cm(&b, Group::RxDuplicates, CM_ATTR_SIDR_REQ) >= dup0 + 2,
        "resends counted as duplicates",
    )?;
    check(
        l.count.load(Ordering::Relaxed) == 1,
        "the listener saw it once",
    )?;
    check(rec.count() == 0, "no answer yet")?;
    // The user gives it up: answered REJECT.
    let held = core::mem::take(&mut *l.seen.lock());
    drop(held);
    let SidrEvent::Rep(r) = rec.take(20)? else {
        return check(false, "held: SIDR REP");
    };
    check(r.status == 2, "dropped unanswered: REJECT")?;
    drop(s);

    // Destroyed while pending: held again, the REQ cancelled, no event
    // comes, not even after the listener's answer.
    let (s, rec) = sidr_send(&a, &to, udp_service_id(7006), 100, 20)?;
    for _ in 0..200 {
        if l.count.load(Ordering::Relaxed) == 2 {
            break;
        }
        time::msleep(10);
    }
    check(
        l.count.load(Ordering::Relaxed) == 2,
        "the second REQ arrived",
    )?;
    drop(s);
    let held = core::mem::take(&mut *l.seen.lock());
    if let Some(h) = held.iter().next() {
        h.sidr_reply(SidrStatus::Success, 5, 5, &[])?;
    }
    time::msleep(300);
    check(rec.count() == 0, "no event after the drop")?;
    drop(reg);
    Ok(())
}

/// Our SIDR REQ to the kernel's CM (rxc to cxc): for UDP port 7174,
/// where cm.sh runs udaddy's server (librdmacm over the kernel's
/// rdma_cm), the private data an rdma_cm header for 10.85.0.2 to
/// 10.85.0.1: the kernel's rdma_cm accepts, its SIDR REP gives the QPN
/// of udaddy's UD QP and the Q_Key of rdma_cm's UDP port space
/// (`RDMA_UDP_QKEY`); for port 7186, where nobody listens, UNSUPPORTED.
fn sidr_ours_to_c() -> Result {
    let c = Ep::new(c_str!("rxc"))?;
    let to = cm_at(&c, [10, 85, 0, 2], [10, 85, 0, 1])?;
    let mut pd = [0u8; 40];
    rdma::spec::cm_msg::CmaHeader::ipv4(0xc123, [10, 85, 0, 2], [10, 85, 0, 1])
        .write(&mut pd)
        .map_err(|_| EINVAL)?;
    pd[36..].copy_from_slice(b"rust");
    let (_s, rec) = sidr_send_data(&c, &to, udp_service_id(7174), 1000, 5, &pd)?;
    let SidrEvent::Rep(r) = rec.take(20)? else {
        return check(false, "the kernel's CM answered");
    };
    pr_info!(
        "sidr: kernel's rdma_cm: status {} qpn {:#x} qkey {:#x}\n",
        r.status,
        r.qpn,
        r.qkey
    );
    check(
        r.status == 0 && r.qpn != 0 && r.qkey == 0x0123_4567,
        "SUCCESS, udaddy's QPN, RDMA_UDP_QKEY",
    )?;
    let (_s, rec) = sidr_send_data(&c, &to, udp_service_id(7186), 1000, 5, &pd)?;
    let SidrEvent::Rep(r) = rec.take(20)? else {
        return check(false, "the kernel's CM answered");
    };
    check(r.status == 1, "nobody listens there: UNSUPPORTED")
}

const CASES: &[FnCase<()>] = &[
    case!("req_lost_duplicated_dreq_lost", |()| lost_and_duplicated()),
    case!("ours_to_ours", |()| ours_to_ours()),
    case!("read_needs_responder_resources", |()| {
        read_needs_responder_resources()
    }),
    case!("listener_destroyed_under_requests", |()| {
        listener_destroyed_under_requests()
    }),
    case!("slow_accept_mra", |()| slow_accept_mra()),
    case!("no_listener_rejected", |()| no_listener()),
    case!("consumer_reject_with_data", |()| consumer_reject()),
    case!("unreachable_after_retries", |()| unreachable()),
    case!("listener_destroyed_with_pending", |()| {
        listener_destroyed_with_pending()
    }),
    case!("sidr_ours_to_ours", |()| sidr_ours_to_ours()),
    case!("sidr_timeout_duplicates_cancel", |()| {
        sidr_timeout_duplicates_cancel()
    }),
    case!("sidr_ours_to_kernel_rdma_cm", |()| sidr_ours_to_c()),
    case!("ours_to_kernel_rdma_cm", |()| ours_to_c()),
    case!("kernel_rdma_cm_to_ours", |()| c_to_ours()),
    case!("device_removed_under_connection", |()| {
        device_removed_under_connection()
    }),
];

struct RxeCmTest;

impl kernel::Module for RxeCmTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut ())?;
        Ok(RxeCmTest)
    }
}
