// SPDX-License-Identifier: GPL-2.0

//! Selftest: rdma-core's `rping`, `rdma_client`, `rdma_server` and
//! `ucmatose` (librdmacm, over the kernel's rxe) against ULPs of ours that
//! speak their protocols, both ways.
//!
//! `cm.sh` (or `make run`) starts the tools (`selftests/lib/cmtools.sh`)
//! before it loads this module: their clients retrying until our servers
//! listen on rxc (10.85.0.2, namespace cmc), their servers on the kernel's
//! rxe (10.85.0.1). `rping -s` runs with `-S 100`: its buffer must be as
//! large as ours, since it READs the size we announce into it. rping's
//! protocol is in `selftests/lib/rping.rs`.
//!
//! `rdma_client`/`rdma_server` (port 7471 to us, 7472 to the kernel's):
//! the client SENDs 16 bytes, the server SENDs 16 bytes back, the client
//! disconnects; each exits 0 when all went well.
//!
//! `ucmatose` (port 7473 to us, 7474 to the kernel's; three connections,
//! ten 100-byte messages): once every connection is up, the server SENDs
//! its ten messages on each, the client receives them and SENDs ten back,
//! and the server disconnects every connection.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::{EAGAIN, EINVAL};
use kernel::prelude::*;

use rdma::cma::{CmId, CmIdCore, EventKind, IpAddr, SockAddr};
use rdma::kshim::time;
use rdma::spec::opcodes::{WcOpcode, WcStatus};
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{RecvWr, SendOp, SendWr};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rping.rs"]
#[allow(dead_code)]
mod rping;
use rping::{param, Ep, Recorder, COUNT, SINK, SRC};

module! {
    type: RxeCmToolsTest,
    name: "rdma_rxe_cmtools_test",
    author: "rdma-rs developers",
    description: "Selftest: rdma-core's rdma_cm tools against our rdma_cm",
    license: "GPL",
}

/// We are rping's server: `rping -c -C 5 -S 100 -V` (the script's)
/// connects to rxc; it checks what we wrote back.
fn rping_client_to_ours() -> Result {
    let ep = Ep::new(c_str!("rxc"))?;
    let done = rping::serve(&ep, 7174, 60)?;
    check(done == COUNT, "every iteration of rping -c")
}

/// We are rping's client against `rping -s` (the script's).
fn ours_to_rping_server() -> Result {
    let ep = Ep::new(c_str!("rxc"))?;
    rping::ping(
        &ep,
        SockAddr {
            ip: IpAddr::V4([10, 85, 0, 1]),
            port: 7175,
        },
    )
}

/// We are `rdma_server` for `rdma_client -s 10.85.0.2 -p 7471` (the
/// script's): its 16 bytes in, 16 bytes back, then its disconnect.
fn rdma_client_to_ours() -> Result {
    let ep = Ep::new(c_str!("rxc"))?;
    let rec = Recorder::make()?;
    let listener = CmId::new(ep.ns()?, rec.clone())?;
    listener.bind_addr(SockAddr {
        ip: IpAddr::V4([0; 4]),
        port: 7471,
    })?;
    listener.listen()?;
    pr_info!("rdma_server: listening on 7471\n");
    let mut ev = rec.take(EventKind::ConnectRequest, 60)?;
    let id = ev.new_id.take().ok_or(EINVAL)?;
    ep.make_qp(&id)?;
    ep.post_recv(&id, 0)?;
    id.accept(&param())?;
    rec.take(EventKind::Established, 20)?;
    let wc = ep.wait(&rec, WcOpcode::Recv)?.ok_or(EINVAL)?;
    check(wc.byte_len == 16, "rdma_client's 16 bytes")?;
    ep.send_info(&id, 0x7264_6d61_5f73_7276, 0, 16)?;
    // rdma_client disconnects as soon as it has our answer, and its QP
    // may go to ERR before it ACKs it: our SEND's completion is not
    // waited for; rdma_client's exit status (cm.sh) says it got it.
    rec.take(EventKind::Disconnected, 20)?;
    pr_info!("rdma_server: served rdma_client\n");
    drop(id);
    drop(listener);
    Ok(())
}

/// We are `rdma_client` of `rdma_server -p 7472` (the script's, on the
/// kernel's rxe): 16 bytes out, 16 bytes back, disconnect.
fn ours_to_rdma_server() -> Result {
    let ep = Ep::new(c_str!("rxc"))?;
    let rec = Recorder::make()?;
    let id = CmId::new(ep.ns()?, rec.clone())?;
    id.resolve_addr(
        None,
        SockAddr {
            ip: IpAddr::V4([10, 85, 0, 1]),
            port: 7472,
        },
    )?;
    rec.take(EventKind::AddrResolved, 20)?;
    id.resolve_route()?;
    rec.take(EventKind::RouteResolved, 20)?;
    ep.make_qp(&id)?;
    ep.post_recv(&id, 0)?;
    id.connect(&param())?;
    rec.take(EventKind::Established, 20)?;
    ep.send_info(&id, 0x7264_6d61_5f63_6c69, 0, 16)?;
    // The answer may complete before our SEND does: take both, in any
    // order.
    let (mut sent, mut got) = (false, None);
    while !sent || got.is_none() {
        let Some(wc) = ep.next(&rec)? else {
            pr_err!(
                "rdma_client: disconnected before both completions (sent {}, got {:?})\n",
                sent,
                got
            );
            return Err(EINVAL);
        };
        if wc.status != WcStatus::Success {
            pr_err!("rdma_client: completion {:?}: {:?}\n", wc.opcode, wc.status);
        }
        check(wc.status == WcStatus::Success, "completed")?;
        match wc.opcode {
            WcOpcode::Send => sent = true,
            WcOpcode::Recv => got = Some(wc.byte_len),
            _ => {}
        }
    }
    check(got == Some(16), "rdma_server's 16 bytes")?;
    id.disconnect()?;
    rec.take(EventKind::Disconnected, 20)?;
    pr_info!("rdma_client: done with rdma_server\n");
    drop(id);
    Ok(())
}

/// ucmatose's connections and messages in the test.
const UCMA_CONNS: usize = 3;
const UCMA_COUNT: usize = 10;
const UCMA_SIZE: u32 = 100;

/// Posts `n` receives of a ucmatose message on `id`'s QP.
fn ucma_recvs(ep: &Ep, id: &CmIdCore, n: usize) -> Result {
    let qp = id.qp().ok_or(EINVAL)?;
    for i in 0..n {
        let sg = [ep.buf.sge(SINK, UCMA_SIZE, ep.mr.lkey())?];
        qp.post_recv(&[RecvWr {
            wr_id: i as u64,
            cqe: None,
            sg: &sg,
        }])
        .map_err(|(_, e)| e)?;
    }
    Ok(())
}

/// Posts ucmatose's messages on `id`'s QP.
fn ucma_sends(ep: &Ep, id: &CmIdCore) -> Result {
    let qp = id.qp().ok_or(EINVAL)?;
    for _ in 0..UCMA_COUNT {
        let sg = [ep.buf.sge(SRC, UCMA_SIZE, ep.mr.lkey())?];
        qp.post_send(&[SendWr::new(7, SendOp::Send, &sg)])
            .map_err(|(_, e)| e)?;
    }
    Ok(())
}

/// Completions seen per connection: sends, receives.
type Counts = [[usize; 2]; UCMA_CONNS];

/// Polls until every connection of `ids` has `want` completions of `op`
/// (a send or a receive), counting the other kind in `seen` too, so that
/// none is lost while the other is awaited.
fn ucma_complete(ep: &Ep, ids: &[CmId], seen: &mut Counts, op: WcOpcode, want: usize) -> Result {
    let k = usize::from(op != WcOpcode::Send);
    let mut wc: [Wc; 8] = Default::default();
    for _ in 0..4000 {
        let n = ep.cq.poll(&mut wc);
        for w in wc.iter().take(n) {
            if w.status != WcStatus::Success {
                pr_err!("ucmatose: completion {:?}: {:?}\n", w.opcode, w.status);
                return Err(EINVAL);
            }
            let kind = match w.opcode {
                WcOpcode::Send => 0,
                WcOpcode::Recv => 1,
                _ => continue,
            };
            if let Some(i) = ids
                .iter()
                .position(|id| id.qp().is_some_and(|q| q.qpn() == w.qp_num))
            {
                seen[i][kind] += 1;
            }
        }
        if seen.iter().take(ids.len()).all(|c| c[k] >= want) {
            return check(
                seen.iter().take(ids.len()).all(|c| c[k] == want),
                "no more than sent",
            );
        }
        if n == 0 {
            time::msleep(5);
        }
    }
    pr_err!("ucmatose: {:?} completions {:?}, want {}\n", op, seen, want);
    Err(EAGAIN)
}

/// We are ucmatose's server for `ucmatose -s 10.85.0.2 -p 7473 -c 3`
/// (the script's): three connections accepted, ten messages sent on each
/// and ten received back, then we disconnect all.
fn ucmatose_client_to_ours() -> Result {
    let ep = Ep::new(c_str!("rxc"))?;
    let rec = Recorder::make()?;
    let listener = CmId::new(ep.ns()?, rec.clone())?;
    listener.bind_addr(SockAddr {
        ip: IpAddr::V4([0; 4]),
        port: 7473,
    })?;
    listener.listen()?;
    pr_info!("ucmatose: listening on 7473\n");
    let mut ids = KVec::new();
    for _ in 0..UCMA_CONNS {
        let mut ev = rec.take(EventKind::ConnectRequest, 60)?;
        let id = ev.new_id.take().ok_or(EINVAL)?;
        ep.make_qp(&id)?;
        ucma_recvs(&ep, &id, UCMA_COUNT)?;
        id.accept(&param())?;
        ids.push(id, GFP_KERNEL)?;
    }
    for _ in 0..UCMA_CONNS {
        rec.take(EventKind::Established, 20)?;
    }
    ep.buf.fill(SRC, UCMA_SIZE as usize, 0x5a)?;
    for id in ids.iter() {
        ucma_sends(&ep, id)?;
    }
    let mut seen: Counts = [[0; 2]; UCMA_CONNS];
    ucma_complete(&ep, &ids, &mut seen, WcOpcode::Send, UCMA_COUNT)?;
    ucma_complete(&ep, &ids, &mut seen, WcOpcode::Recv, UCMA_COUNT)?;
    for id in ids.iter() {
        id.disconnect()?;
    }
    for _ in 0..UCMA_CONNS {
        rec.take(EventKind::Disconnected, 20)?;
    }
    pr_info!("ucmatose: served {} connections\n", UCMA_CONNS);
    drop(ids);
    drop(listener);
    Ok(())
}

/// We are ucmatose's client of `ucmatose -p 7474 -c 3` (the script's, on
/// the kernel's rxe): three connections, ten messages received and ten
/// sent back on each; the server disconnects.
fn ours_to_ucmatose_server() -> Result {
    let ep = Ep::new(c_str!("rxc"))?;
    let rec = Recorder::make()?;
    let mut ids = KVec::new();
    for _ in 0..UCMA_CONNS {
        let id = CmId::new(ep.ns()?, rec.clone())?;
        id.resolve_addr(
            None,
            SockAddr {
                ip: IpAddr::V4([10, 85, 0, 1]),
                port: 7474,
            },
        )?;
        rec.take(EventKind::AddrResolved, 20)?;
        id.resolve_route()?;
        rec.take(EventKind::RouteResolved, 20)?;
        ep.make_qp(&id)?;
        ucma_recvs(&ep, &id, UCMA_COUNT)?;
        id.connect(&param())?;
        rec.take(EventKind::Established, 20)?;
        ids.push(id, GFP_KERNEL)?;
    }
    let mut seen: Counts = [[0; 2]; UCMA_CONNS];
    ucma_complete(&ep, &ids, &mut seen, WcOpcode::Recv, UCMA_COUNT)?;
    for id in ids.iter() {
        ucma_sends(&ep, id)?;
    }
    ucma_complete(&ep, &ids, &mut seen, WcOpcode::Send, UCMA_COUNT)?;
    for _ in 0..UCMA_CONNS {
        rec.take(EventKind::Disconnected, 20)?;
    }
    for id in ids.iter() {
        let _ = id.disconnect();
    }
    pr_info!(
        "ucmatose: {} connections to ucmatose's server\n",
        UCMA_CONNS
    );
    drop(ids);
    Ok(())
}

const CASES: &[FnCase<()>] = &[
    case!("rping_client_to_ours", |()| rping_client_to_ours()),
    case!("ours_to_rping_server", |()| ours_to_rping_server()),
    case!("rdma_client_to_ours", |()| rdma_client_to_ours()),
    case!("ours_to_rdma_server", |()| ours_to_rdma_server()),
    case!("ucmatose_client_to_ours", |()| ucmatose_client_to_ours()),
    case!("ours_to_ucmatose_server", |()| ours_to_ucmatose_server()),
];

struct RxeCmToolsTest;

impl kernel::Module for RxeCmToolsTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut ())?;
        Ok(RxeCmToolsTest)
    }
}
