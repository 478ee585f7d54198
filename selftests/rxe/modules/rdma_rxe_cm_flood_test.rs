// SPDX-License-Identifier: GPL-2.0

//! Selftest: a flood of REQs that never complete, at our CM, while a ULP
//! connects and disconnects (`cm_flood.sh`).
//!
//! `cm_flood.sh` makes `rxa` on 10.86.0.1 and `rxb` on 10.86.0.2 and
//! 10.86.0.3 (one veth pair). A server listens on rxa port 6000 and
//! accepts every request (an id and a QP each). From rxb's 10.86.0.3 a UD
//! QP (not the CM's: nothing on rxb answers the REPs) sends [`FLOOD`] REQs
//! to rxa's QP1, each with a fresh communication ID and QPN and a REP
//! timeout of [`REP_TIMEOUT`] (134 s) without retries, at most [`WINDOW`]
//! unanswered at a time, and counts the answers: a REP for each admitted
//! REQ, a REJ NO_RESOURCES for each one beyond the bound of half-open
//! connections one source may hold (`rdma::cm::table::LIMITS`). Meanwhile
//! a client on rxb's 10.86.0.2 connects to the same listener and
//! disconnects in a loop (a work item): every connect must succeed, and
//! no REQ of the client's may need a resend. The client's REQs ask for a
//! CM response timeout of [`LEGIT_RESPONSE_TIMEOUT`] (some 17 s, against
//! the rdma_cm's 4 s), which is what "starved" means here: far beyond a
//! wait behind the flood's window of REQs on a loaded TCG host (the
//! slowest connect, logged, was 7.9 s on a busy host), short of a
//! wait behind the whole flood (30 s and more).
//! Then the flood's REPs time out: the half-open count of rxa goes back to
//! zero, the server's ids go, and the CM's connections and the rdma_cm's
//! ids are back where they were before (kmemleak checks the rest at the
//! end of the run).

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use kernel::c_str;
use kernel::error::code::{EAGAIN, EINVAL, ENODEV, ENOMEM};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::cm::counters::Group;
use rdma::cm::table::LIMITS;
use rdma::cma::{
    CmEvent, CmHandler, CmId, CmIdCore, ConnParam, Disposition, EventKind, IpAddr, SockAddr,
};
use rdma::device::Device;
use rdma::kshim::time;
use rdma::kshim::work::OwnedQueue;
use rdma::spec::attr::Gid;
use rdma::spec::cm_msg::{
    tcp_service_id, Bytes, CmMessage, CmaHeader, RejReason, Req, ReqPath, REQ_PRIVATE_DATA_LEN,
    TRANSPORT_RC,
};
use rdma::spec::mad::{CM_ATTR_REQ, MAD_SIZE};
use rdma::spec::opcodes::{Access, WcOpcode, WcStatus};
use rdma::spec::qp_state::QpType;
use rdma::verbs::qp::QpCap;
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{RecvWr, SendOp, SendWr, UdDest};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{End, Opts, Port};

#[path = "../../lib/rping.rs"]
#[allow(dead_code)]
mod rping;
use rping::{client_id, param, Ep, Recorder};

module! {
    type: RxeCmFloodTest,
    name: "rdma_rxe_cm_flood_test",
    author: "rdma-rs developers",
    description: "Selftest: a REQ flood at the CM while a ULP connects",
    license: "GPL",
}

/// REQs in the flood: the bound on one source (1024) admitted, 512
/// refused.
const FLOOD: u32 = 1536;
/// REQs sent and not answered yet, at most.
const WINDOW: u32 = 32;
/// The REP timeout the flood's REQs ask for, in IBA time: 2^(25 - 8) ms,
/// about 134 s, with no REP retries: a REQ admitted stays half-open that
/// long, longer than the flood takes (20 to 40 ms a REQ under TCG with
/// KASAN, 30 to 65 s in all, the most on a busy host; the case fails if
/// the flood outlasts it).
const REP_TIMEOUT: u8 = 25;
/// The CM response timeout of the client's REQs (IBA time: 2^(22 - 8) ms,
/// about 17 s): a REQ resent after it is a starved client.
const LEGIT_RESPONSE_TIMEOUT: u8 = 22;
/// Legitimate connects at least (more while the flood lasts).
const MIN_CONNECTS: u32 = 5;
/// The listener's port.
const PORT: u16 = 6000;
/// The UD QP's receive slots: the GRH and a MAD each.
const SLOT: usize = 512;
const RECV_SLOTS: usize = 64;
const SEND_AT: usize = RECV_SLOTS * SLOT;
/// The well-known Q_Key of QP1.
const GSI_QKEY: u32 = 0x8001_0000;
const GRH: usize = 40;

const SERVER: [u8; 4] = [10, 86, 0, 1];
const CLIENT: [u8; 4] = [10, 86, 0, 2];
const FLOODER: [u8; 4] = [10, 86, 0, 3];
/// The flood's fake CA GUID.
const FLOOD_GUID: u64 = 0x0002_c9ff_fe00_0003;
/// The flood's first communication ID and QPN.
const FLOOD_ID0: u32 = 0x5000_0000;
const FLOOD_QPN0: u32 = 0x10_0000;

/// What the server saw.
#[derive(Default)]
struct Seen {
    /// Its connections' ids, until they end.
    children: KVec<CmId>,
    requests: u64,
    accepted: u64,
    failed: u64,
    established: u64,
    unreachable: u64,
    disconnected: u64,
}

/// The server: accepts every request; lets each id go when its
/// connection ends.
#[pin_data]
struct Server {
    ep: Ep,
    #[pin]
    seen: Mutex<Seen>,
}

impl CmHandler for Server {
    fn event(&self, id: &Arc<CmIdCore>, mut ev: CmEvent) -> Disposition {
        let gone = {
            let mut s = self.seen.lock();
            match ev.kind {
                EventKind::ConnectRequest => {
                    s.requests += 1;
                    if let Some(child) = ev.new_id.take() {
                        let ok = self.ep.make_qp(&child).is_ok() && child.accept(&param()).is_ok();
                        if ok && s.children.push(child, GFP_KERNEL).is_ok() {
                            s.accepted += 1;
                        } else {
                            s.failed += 1;
                        }
                    }
                    None
                }
                EventKind::Established => {
                    s.established += 1;
                    None
                }
                EventKind::Unreachable | EventKind::Rejected | EventKind::Disconnected => {
                    if ev.kind == EventKind::Unreachable {
                        s.unreachable += 1;
                    } else {
                        s.disconnected += 1;
                    }
                    let at = s.children.iter().position(|c| Arc::ptr_eq(&**c, id));
                    at.and_then(|i| rdma::kshim::vec::remove(&mut s.children, i))
                }
                _ => None,
            }
        };
        // Outside the lock: destroying waits for nothing of ours.
        drop(gone);
        Disposition::Keep
    }
}

/// What the legitimate client did.
#[derive(Default)]
struct Legit {
    connects: AtomicU64,
    failures: AtomicU64,
    slowest_ms: AtomicU64,
    stop: AtomicBool,
    done: AtomicBool,
}

/// One legitimate connection: resolve, connect (timed), disconnect.
fn legit_once(ep: &Ep, ns: &rdma::kshim::route::NetNs, stats: &Legit) -> Result {
    let rec = Recorder::make()?;
    let id = client_id(
        ep,
        ns.try_clone()?,
        &rec,
        Some(SockAddr {
            ip: IpAddr::V4(CLIENT),
            port: 0,
        }),
        SockAddr {
            ip: IpAddr::V4(SERVER),
            port: PORT,
        },
    )?;
    let t0 = time::now_ms();
    id.connect(&ConnParam {
        cm_response_timeout: Some(LEGIT_RESPONSE_TIMEOUT),
        ..param()
    })?;
    rec.take(EventKind::Established, 20)?;
    let ms = time::now_ms() - t0;
    stats.slowest_ms.fetch_max(ms, Ordering::Relaxed);
    id.disconnect()?;
    rec.take(EventKind::Disconnected, 20)?;
    drop(id);
    Ok(())
}

/// The client's loop, until told to stop (and at least
/// [`MIN_CONNECTS`] times).
fn legit_loop(stats: Arc<Legit>) {
    let run = || -> Result {
        let ep = Ep::new(c_str!("rxb"))?;
        let ns = ep.ns()?;
        let mut n = 0;
        while n < MIN_CONNECTS || !stats.stop.load(Ordering::Acquire) {
            match legit_once(&ep, &ns, &stats) {
                Ok(()) => stats.connects.fetch_add(1, Ordering::Relaxed),
                Err(e) => {
                    pr_err!("cm flood: a legitimate connect failed: {:?}\n", e);
                    stats.failures.fetch_add(1, Ordering::Relaxed)
                }
            };
            n += 1;
        }
        Ok(())
    };
    if let Err(e) = run() {
        pr_err!("cm flood: the client could not start: {:?}\n", e);
        stats.failures.fetch_add(1, Ordering::Relaxed);
    }
    stats.done.store(true, Ordering::Release);
}

/// The flood's REQ number `i`.
fn flood_req(i: u32) -> Result<[u8; MAD_SIZE]> {
    let mut pd = [0u8; REQ_PRIVATE_DATA_LEN];
    CmaHeader::ipv4(10_000 + (i % 50_000) as u16, FLOODER, SERVER)
        .write(&mut pd)
        .map_err(|_| EINVAL)?;
    let req = Req {
        local_comm_id: FLOOD_ID0 + i,
        service_id: tcp_service_id(PORT),
        local_ca_guid: FLOOD_GUID,
        local_qpn: FLOOD_QPN0 + i,
        remote_cm_response_timeout: 20,
        transport_service_type: TRANSPORT_RC,
        starting_psn: i & 0xff_ffff,
        local_cm_response_timeout: REP_TIMEOUT,
        retry_count: 7,
        partition_key: 0xffff,
        path_mtu: 3,
        rnr_retry_count: 7,
        max_cm_retries: 0,
        primary_path: ReqPath {
            local_lid: 0xffff,
            remote_lid: 0xffff,
            local_gid: Gid::from_ipv4(FLOODER),
            remote_gid: Gid::from_ipv4(SERVER),
            hop_limit: 64,
            local_ack_timeout: 17,
            ..ReqPath::default()
        },
        private_data: Bytes::from_slice(&pd).map_err(|_| EINVAL)?,
        ..Req::default()
    };
    let mut mad = [0u8; MAD_SIZE];
    CmMessage::Req(req)
        .write_mad(0xf100_0000_0000_0000 | u64::from(i), 0, &mut mad)
        .map_err(|_| EINVAL)?;
    Ok(mad)
}

/// What came back to the flood.
#[derive(Default, Debug)]
struct Answers {
    reps: u32,
    no_resources: u32,
    other_rejs: u32,
    /// Answers to a REQ already answered (REP resends), and others.
    extra: u32,
}

/// Sends the flood from `e` (a UD QP on 10.86.0.3) to rxa's QP1; every
/// REQ gets its answer before the flood ends.
fn flood(e: &End, stats: &Legit) -> Result<Answers> {
    let ah = e.ah(Gid::from_ipv4(SERVER))?;
    let rcq = e.recv_cq();
    for s in 0..RECV_SLOTS {
        let sg = [e.sge(s * SLOT, SLOT)?];
        e.qp.post_recv(&[RecvWr {
            wr_id: s as u64,
            cqe: None,
            sg: &sg,
        }])
        .map_err(|(_, e)| e)?;
    }
    let mut answered = KVec::from_elem(false, FLOOD as usize, GFP_KERNEL)?;
    let mut a = Answers::default();
    let (mut sent, mut sends_done, mut first_answers) = (0u32, 0u32, 0u32);
    let mut wcs: [Wc; 16] = Default::default();
    let mut idle_ms = 0;
    while first_answers < FLOOD {
        let mut progress = false;
        while sent < FLOOD && sent - first_answers < WINDOW && sent - sends_done < WINDOW {
            let slot = SEND_AT + (sent % WINDOW) as usize * MAD_SIZE;
            e.buf.write(slot, &flood_req(sent)?)?;
            let sg = [e.sge(slot, MAD_SIZE)?];
            let mut wr = SendWr::new(u64::from(sent), SendOp::Send, &sg);
            wr.ud = Some(UdDest {
                ah: ah.core(),
                remote_qpn: 1,
                remote_qkey: GSI_QKEY,
            });
            e.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
            sent += 1;
            progress = true;
        }
        let n = e.cq.poll(&mut wcs);
        for wc in wcs.iter().take(n) {
            if wc.status != WcStatus::Success || wc.opcode != WcOpcode::Send {
                pr_err!("cm flood: send {:?} {:?}\n", wc.opcode, wc.status);
                return Err(EINVAL);
            }
            sends_done += 1;
            progress = true;
        }
        let n = rcq.poll(&mut wcs);
        for wc in wcs.iter().take(n) {
            if wc.status != WcStatus::Success {
                pr_err!("cm flood: receive {:?}\n", wc.status);
                return Err(EINVAL);
            }
            let s = wc.wr_id as usize;
            let mut mad = [0u8; MAD_SIZE];
            e.buf.read(s * SLOT + GRH, &mut mad)?;
            let sg = [e.sge(s * SLOT, SLOT)?];
            e.qp.post_recv(&[RecvWr {
                wr_id: s as u64,
                cqe: None,
                sg: &sg,
            }])
            .map_err(|(_, e)| e)?;
            progress = true;
            let (to, kind) = match CmMessage::parse_mad(&mad) {
                Ok((_, CmMessage::Rep(m))) => (m.remote_comm_id, 0),
                Ok((_, CmMessage::Rej(m))) if m.reason == RejReason::NoResources as u16 => {
                    (m.remote_comm_id, 1)
                }
                Ok((_, CmMessage::Rej(m))) => (m.remote_comm_id, 2),
                _ => (0, 3),
            };
            let i = to.wrapping_sub(FLOOD_ID0) as usize;
            match answered.get_mut(i) {
                Some(seen) if !*seen && kind < 3 => {
                    *seen = true;
                    first_answers += 1;
                    match kind {
                        0 => a.reps += 1,
                        1 => a.no_resources += 1,
                        _ => a.other_rejs += 1,
                    }
                }
                _ => a.extra += 1,
            }
        }
        if progress {
            idle_ms = 0;
        } else {
            idle_ms += 1;
            if idle_ms > 20_000 {
                pr_err!(
                    "cm flood: stuck at {} sent, {} answered: {:?}\n",
                    sent,
                    first_answers,
                    a
                );
                return Err(EAGAIN);
            }
            time::msleep(1);
        }
        if stats.done.load(Ordering::Acquire) && stats.failures.load(Ordering::Relaxed) > 0 {
            return Err(EINVAL);
        }
    }
    Ok(a)
}

/// The count of CM message `attr` in `group` on `dev` port 1.
fn cm_count(dev: &Device, group: Group, attr: u16) -> u64 {
    rdma::cm::port::counters(dev, 1).map_or(u64::MAX, |c| c.get(group, attr))
}

fn refused(dev: &Device) -> u64 {
    rdma::cm::port::counters(dev, 1).map_or(u64::MAX, |c| c.no_resources())
}

/// What the case leaves running, ended however it returns, before the
/// module can go: the client's loop is stopped and waited for, the
/// listener and every id of the server are destroyed (their handler is
/// this module's code).
struct Cleanup {
    server: Arc<Server>,
    listener: Option<CmId>,
    legit: Option<Arc<Legit>>,
    /// The queue the client's loop runs on: drained before the module
    /// may go, so that the loop's tail (after it says it is done) never
    /// runs from freed module text.
    queue: Option<OwnedQueue>,
}

impl Cleanup {
    /// Stops the client's loop and waits for it (its last connect
    /// included: each of its steps waits 20 s at most), then for its
    /// work item to return.
    fn stop_legit(&mut self) {
        if let Some(l) = self.legit.take() {
            l.stop.store(true, Ordering::Release);
            while !l.done.load(Ordering::Acquire) {
                time::msleep(10);
            }
        }
        if let Some(q) = &self.queue {
            q.drain();
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.stop_legit();
        drop(self.listener.take());
        let children = core::mem::take(&mut self.server.seen.lock().children);
        drop(children);
    }
}

fn flood_while_connecting() -> Result {
    let ep = Ep::new(c_str!("rxa"))?;
    let server = Arc::pin_init(
        pin_init!(Server {
            ep,
            seen <- new_mutex!(Seen::default(), "Server::seen"),
        }),
        GFP_KERNEL,
    )?;
    let mut cleanup = Cleanup {
        server: server.clone(),
        listener: None,
        legit: None,
        queue: None,
    };
    let rxa = server.ep.dev.arc().clone();
    let rxb = rdma::device::get_by_name(c_str!("rxb")).ok_or(ENODEV)?;
    let listener = cleanup
        .listener
        .insert(CmId::new(server.ep.ns()?, server.clone())?);
    listener.bind_addr(SockAddr {
        ip: IpAddr::V4([0; 4]),
        port: PORT,
    })?;
    listener.listen()?;
    let (conns0, ids0) = (rdma::cm::table::conn_count(), rdma::cma::live_ids());
    let refused0 = refused(&rxa);
    let retries0 = cm_count(rxb.arc(), Group::TxRetries, CM_ATTR_REQ);
    check(
        rdma::cm::port::half_open(&rxa, 1) == 0,
        "nothing half-open before",
    )?;

    // A UD QP on rxb's 10.86.0.3, with QP1's Q_Key so that the answers
    // of rxa's CM reach it.
    let o = Opts {
        qp_type: QpType::Ud,
        mr_access: Access::LOCAL_WRITE,
        buf_len: SEND_AT + WINDOW as usize * MAD_SIZE,
        cqe: 256,
        recv_cqe: Some(256),
        cap: QpCap {
            max_send_wr: 64,
            max_recv_wr: RECV_SLOTS as u32,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        },
        sq_sig_all: true,
        qkey: GSI_QKEY,
        ..rc::RC
    };
    let flooder = End::new(
        Port {
            name: c_str!("rxb"),
            gid: Gid::from_ipv4(FLOODER),
        },
        &o,
    )?;
    flooder.ready()?;

    let stats = Arc::new(Legit::default(), GFP_KERNEL)?;
    cleanup.legit = Some(stats.clone());
    let s2 = stats.clone();
    let queue = cleanup
        .queue
        .insert(OwnedQueue::new(c_str!("cm_flood_legit"))?);
    if queue.try_spawn(GFP_KERNEL, move || legit_loop(s2)).is_err() {
        // Never started: nothing to wait for.
        cleanup.legit = None;
        return Err(ENOMEM);
    }
    let t0 = time::now_ms();
    let answers = flood(&flooder, &stats);
    let flood_ms = time::now_ms() - t0;
    cleanup.stop_legit();
    let a = answers?;
    let peak = rdma::cm::port::half_open(&rxa, 1);
    let refused = refused(&rxa) - refused0;
    pr_info!(
        "cm flood: {} REQs in {} ms: {:?}; {} refused; {} half-open after; {} legitimate connects, slowest {} ms\n",
        FLOOD,
        flood_ms,
        a,
        refused,
        peak,
        stats.connects.load(Ordering::Relaxed),
        stats.slowest_ms.load(Ordering::Relaxed)
    );
    check(
        stats.failures.load(Ordering::Relaxed) == 0
            && stats.connects.load(Ordering::Relaxed) >= u64::from(MIN_CONNECTS),
        "every legitimate connect succeeded",
    )?;
    check(
        cm_count(rxb.arc(), Group::TxRetries, CM_ATTR_REQ) == retries0,
        "no legitimate REQ resent",
    )?;
    check(
        flood_ms < rdma::spec::cm_state::iba_time_to_ms(REP_TIMEOUT),
        "the flood ended before its first REP timed out",
    )?;
    check(
        a.reps == LIMITS.per_source && a.other_rejs == 0,
        "REPs for as many REQs as the bound on one source",
    )?;
    check(
        u64::from(a.no_resources) == u64::from(FLOOD - LIMITS.per_source)
            && refused == u64::from(a.no_resources),
        "every REQ beyond the bound refused with NO_RESOURCES, counted",
    )?;
    check(peak == LIMITS.per_source, "half-open at the bound")?;

    // The flood's REPs time out (no retries): everything goes.
    let wait_ms = rdma::spec::cm_state::iba_time_to_ms(REP_TIMEOUT) + 60_000;
    let t1 = time::now_ms();
    while time::now_ms() - t1 < wait_ms {
        if rdma::cm::port::half_open(&rxa, 1) == 0 && server.seen.lock().children.is_empty() {
            break;
        }
        time::msleep(100);
    }
    let (unreachable, left) = {
        let s = server.seen.lock();
        pr_info!(
            "cm flood: server: {} requests, {} accepted, {} failed, {} established, {} unreachable, {} disconnected, {} left\n",
            s.requests,
            s.accepted,
            s.failed,
            s.established,
            s.unreachable,
            s.disconnected,
            s.children.len()
        );
        (s.unreachable, s.children.len())
    };
    check(
        rdma::cm::port::half_open(&rxa, 1) == 0,
        "nothing half-open once the flood's timers ran out",
    )?;
    check(
        left == 0 && unreachable == u64::from(LIMITS.per_source),
        "every flood connection ended unreachable, its id gone",
    )?;
    // Timewaits of the legitimate connections end too.
    for _ in 0..3000 {
        if rdma::cm::table::conn_count() == conns0 && rdma::cma::live_ids() == ids0 {
            break;
        }
        time::msleep(10);
    }
    check(
        rdma::cm::table::conn_count() == conns0,
        "the CM's connections back to before",
    )?;
    check(
        rdma::cma::live_ids() == ids0,
        "the rdma_cm's ids back to before",
    )?;
    drop(flooder);
    drop(cleanup);
    Ok(())
}

const CASES: &[FnCase<()>] = &[case!(flood_while_connecting)];

struct RxeCmFloodTest;

impl kernel::Module for RxeCmFloodTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut ())?;
        Ok(RxeCmFloodTest)
    }
}
