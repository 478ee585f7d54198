// SPDX-License-Identifier: GPL-2.0

//! Selftest: our RTRS client and our RTRS server, over two paths. The
//! server is `rtrs_rnbd_srv_test.ko` (namespace rt_b, 10.80.4.2 on our rxe
//! `rtb` and 10.80.5.2 on `rtn`); this module opens one session to both
//! from namespace rt_m (our rxe `rtm1` on 10.80.4.1 and `rtm2` on
//! 10.80.5.1) and speaks RNBD over it.
//!
//! Its cases: the session connects both paths; SESS_INFO and OPEN; IO
//! verified under each multipath policy, with what each policy must do to
//! the spread of IO over the paths (round-robin alternates, min-inflight
//! uses both under load, min-latency uses a measured path). Then a
//! one-path session to a server of its own that stops answering heartbeats
//! (the client fails the path on heartbeats alone) and one that answers.
//!
//! Then it leaves a load running until it is unloaded: rounds of 32 writes
//! of 4 KiB in flight, read back and compared; after every round it logs
//! `rtrs mpath: R rounds, E IO errors, M mismatches, F failovers, up U`.
//! `mpath.sh` takes a link down and up under it, reloads the server,
//! removes a device, and unloads this module (closing the session under
//! IO), and reads those lines: IO errors are allowed only while no path is
//! up, mismatches never. After the server comes back (an empty disk, the
//! RNBD session forgotten), the load opens the device again when the
//! session reports a path up.

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use kernel::c_str;
use kernel::error::code::{EINVAL, EIO};
use kernel::prelude::*;
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};
use kernel::time::msecs_to_jiffies;
use kernel::workqueue::{self, impl_has_work, new_work, Work, WorkItem};

use rdma::cma::{IpAddr, SockAddr};
use rdma::kshim::mem::Buffer;
use rtrs::clt::{Config, Dir, LinkOps, PathAddr, Phase, Policy, Session};
use rtrs::proto::consts::RTRS_PORT;
use rtrs::srv::{EvContext, Params, Server, SrvOps, SrvRequest};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "rnbd_clt.rs"]
mod rnbd_clt;
use rnbd_clt::{fill, ns_of, Rnbd};

#[path = "../../lib/verify.rs"]
mod verify;
use verify::same;

module! {
    type: MpathTest,
    name: "rtrs_mpath_test",
    author: "rdma-rs developers",
    description: "Selftest: our RTRS client and server over two paths",
    license: "GPL",
}

/// IOs per round of the load, and their size.
const N: usize = 32;
const BS: usize = 4096;

/// What the session tells the load.
struct Link {
    up_again: AtomicBool,
}

impl LinkOps for Link {
    fn link_ev(&self, up: bool) {
        pr_info!("rtrs mpath: link {}\n", if up { "up" } else { "down" });
        if up {
            self.up_again.store(true, Ordering::Release);
        }
    }
}

/// The session, its device, and the load's state.
#[pin_data]
struct Load {
    sess: Session,
    link: Arc<Link>,
    dev: AtomicU64,
    a: Arc<Buffer>,
    b: Arc<Buffer>,
    stop: AtomicBool,
    rounds: AtomicU64,
    io_errors: AtomicU64,
    mismatches: AtomicU64,
    #[pin]
    done: Mutex<bool>,
    #[pin]
    done_cv: CondVar,
    /// Runs the load (a work item of this module's own lock class).
    #[pin]
    work: Work<Load>,
}

impl_has_work! {
    impl HasWork<Self> for Load { self.work }
}

impl WorkItem for Load {
    type Pointer = Arc<Load>;

    fn run(this: Arc<Load>) {
        this.run_load();
    }
}

fn open_session() -> Result<(Session, Arc<Link>)> {
    let ns = ns_of(c_str!("rtm1"))?;
    let at = |c| SockAddr {
        ip: IpAddr::V4([10, 80, c, 2]),
        port: RTRS_PORT,
    };
    let paths = [
        PathAddr {
            src: None,
            dst: at(4),
        },
        PathAddr {
            src: None,
            dst: at(5),
        },
    ];
    let mut cfg = Config::new(b"rdma_rs_mpath", &paths);
    cfg.reconnect_delay_ms = 1000;
    let link = Arc::new(
        Link {
            up_again: AtomicBool::new(false),
        },
        GFP_KERNEL,
    )?;
    let l: Arc<dyn LinkOps> = link.clone();
    let s = Session::open(ns, &cfg, Some(l))?;
    Ok((s, link))
}

struct Ctx {
    load: Option<Arc<Load>>,
}

impl Ctx {
    fn load(&self) -> Result<&Arc<Load>> {
        self.load.as_ref().ok_or(EINVAL)
    }
}

fn two_paths(c: &mut Ctx) -> Result {
    let (sess, link) = open_session()?;
    let paths = sess.paths()?;
    check(paths.len() == 2, "two paths")?;
    for p in paths.iter() {
        check(p.phase() == Phase::Connected, "every path connected")?;
    }
    let a = sess.query()?;
    check(a.queue_depth == 60, "the test server's queue depth")?;
    let (a, b) = (Buffer::new(N * BS)?, Buffer::new(N * BS)?);
    let load = Arc::pin_init(
        pin_init!(Load {
            sess,
            link,
            dev: AtomicU64::new(0),
            a,
            b,
            stop: AtomicBool::new(false),
            rounds: AtomicU64::new(0),
            io_errors: AtomicU64::new(0),
            mismatches: AtomicU64::new(0),
            done <- new_mutex!(false, "rtrs_mpath_test::Load::done"),
            done_cv <- new_condvar!("rtrs_mpath_test::Load::done_cv"),
            work <- new_work!("rtrs_mpath_test::Load::work"),
        }),
        GFP_KERNEL,
    )?;
    c.load = Some(load);
    Ok(())
}

fn open_device(c: &mut Ctx) -> Result {
    let l = c.load()?;
    l.reopen()
}

/// IOs per path: reads and writes.
fn per_path(l: &Load) -> Result<[u64; 2]> {
    let paths = l.sess.paths()?;
    let mut v = [0u64; 2];
    for (i, p) in paths.iter().enumerate().take(2) {
        v[i] = p.stats.reads.load(Ordering::Relaxed) + p.stats.writes.load(Ordering::Relaxed);
    }
    Ok(v)
}

/// One round of IO under `policy`; returns how many IOs each path took.
fn policy_round(l: &Load, policy: Policy, seed: u32) -> Result<[u64; 2]> {
    l.sess.inner().set_policy(policy);
    let before = per_path(l)?;
    l.round(seed)?;
    let after = per_path(l)?;
    Ok([after[0] - before[0], after[1] - before[1]])
}

fn round_robin(c: &mut Ctx) -> Result {
    let l = c.load()?;
    let d = policy_round(l, Policy::RoundRobin, 1)?;
    pr_info!("rtrs mpath: round-robin: {} and {} IOs\n", d[0], d[1]);
    // 2N IOs alternate between the two paths.
    check(d[0] == d[1] && d[0] == N as u64, "round-robin alternates")
}

fn min_inflight(c: &mut Ctx) -> Result {
    let l = c.load()?;
    let d = policy_round(l, Policy::MinInflight, 2)?;
    pr_info!("rtrs mpath: min-inflight: {} and {} IOs\n", d[0], d[1]);
    check(
        d[0] > 0 && d[1] > 0,
        "min-inflight uses both paths under load",
    )
}

fn min_latency(c: &mut Ctx) -> Result {
    let l = c.load()?;
    // The heartbeats (every 5 s) measure both paths' latency first: the
    // first acknowledged heartbeat of each path, within two periods.
    let measured = || {
        l.sess
            .paths()
            .is_ok_and(|ps| ps.iter().all(|p| p.latency_ns() > 0))
    };
    let _ = wait_for(11, measured);
    let lat: KVec<u64> = {
        let mut v = KVec::new();
        for p in l.sess.paths()?.iter() {
            v.push(p.latency_ns(), GFP_KERNEL)?;
        }
        v
    };
    pr_info!("rtrs mpath: latencies {:?} ns\n", &lat[..]);
    check(lat.iter().all(|&x| x > 0), "both latencies measured")?;
    let d = policy_round(l, Policy::MinLatency, 3)?;
    pr_info!("rtrs mpath: min-latency: {} and {} IOs\n", d[0], d[1]);
    check(d[0] + d[1] == 2 * N as u64, "min-latency carries every IO")
}

fn policy_text(c: &mut Ctx) -> Result {
    let l = c.load()?;
    let s = l.sess.inner();
    s.set_policy(Policy::parse(b"min-latency\n").map_err(|_| EINVAL)?);
    check(
        s.policy().show() == "min-latency (ML: 2)",
        "the policy reads back",
    )?;
    check(
        Policy::parse(b"fastest").is_err(),
        "an unknown policy is refused",
    )?;
    check(
        s.set_max_reconnect_attempts(10000).is_err() && s.set_max_reconnect_attempts(-2).is_err(),
        "reconnect attempts out of range are refused",
    )?;
    s.set_policy(Policy::MinInflight);
    Ok(())
}

/// Our server invalidates on RTRS's port (the session above) and not one
/// port up: a one-path session there works the same.
fn both_invalidate_modes(c: &mut Ctx) -> Result {
    let l = c.load()?;
    let main = l.sess.paths()?;
    check(
        main.iter().all(|p| p.new_rkey()),
        "RTRS's port: a new key after every request",
    )?;
    let ns = ns_of(c_str!("rtm1"))?;
    let paths = [PathAddr {
        src: None,
        dst: SockAddr {
            ip: IpAddr::V4([10, 80, 4, 2]),
            port: RTRS_PORT + 1,
        },
    }];
    let s = Session::open(ns, &Config::new(b"rdma_rs_plain", &paths), None)?;
    check(
        s.paths()?.iter().all(|p| !p.new_rkey()),
        "one port up: one key for every chunk",
    )?;
    let r = Rnbd::new(&s)?;
    check(r.sess_info()? == 2, "RNBD 2")?;
    let d = r.open(b"ours")?;
    fill(&l.a, 0, N * BS, 77)?;
    l.b.fill(0, N * BS, 0)?;
    r.io_many(d.id, Dir::Write, 4096, &l.a, BS, N)?;
    r.io_many(d.id, Dir::Read, 4096, &l.b, BS, N)?;
    check(
        same(&l.a, 0, &l.b, 0, N * BS)?,
        "the bytes read are those written",
    )
}

/// What a session's link events were: downs and ups.
struct Events {
    down: AtomicU64,
    up: AtomicU64,
}

impl LinkOps for Events {
    fn link_ev(&self, up: bool) {
        if up {
            self.up.fetch_add(1, Ordering::Relaxed);
        } else {
            self.down.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Waits up to `secs` for `f`; how many tenths of a second it took.
fn wait_for(secs: u32, f: impl Fn() -> bool) -> Option<u32> {
    for t in 0..secs * 10 {
        if f() {
            return Some(t);
        }
        rdma::kshim::time::msleep(100);
    }
    None
}

/// A server that stops answering heartbeats but keeps its transport up
/// (our server with `heartbeats` off, on a port of its own in rt_b): the
/// client fails the path on heartbeats alone, after 5 periods of 5 s with
/// no answer, and tells the ULP the link is down; once a server that
/// answers listens there again, the path reconnects, its heartbeats are
/// acknowledged and it stays up.
fn peer_stops_heartbeats(_c: &mut Ctx) -> Result {
    const PORT: u16 = RTRS_PORT + 5;
    let ans: Arc<dyn SrvOps> = Arc::new(Always, GFP_KERNEL)?;
    let mute = Params {
        heartbeats: false,
        ..Params::DEFAULT
    };
    let muted = Server::open_with(ns_of(c_str!("rtb"))?, PORT, ans.clone(), mute)?;
    let paths = [PathAddr {
        src: None,
        dst: SockAddr {
            ip: IpAddr::V4([10, 80, 4, 2]),
            port: PORT,
        },
    }];
    let mut cfg = Config::new(b"rdma_rs_hb", &paths);
    cfg.reconnect_delay_ms = 1000;
    let ev = Arc::new(
        Events {
            down: AtomicU64::new(0),
            up: AtomicU64::new(0),
        },
        GFP_KERNEL,
    )?;
    let link: Arc<dyn LinkOps> = ev.clone();
    let s = Session::open(ns_of(c_str!("rtm1"))?, &cfg, Some(link))?;
    let t = wait_for(60, || ev.down.load(Ordering::Relaxed) > 0);
    pr_info!(
        "rtrs mpath: silent server: link down after {:?} tenths of a second\n",
        t
    );
    // Nothing else fails the path: not before 5 periods of 5 s less the
    // first period's slack.
    check(
        t.is_some_and(|t| t >= 200),
        "the path fails on heartbeats, after 5 unanswered",
    )?;
    drop(muted);
    let _answering = Server::open_with(ns_of(c_str!("rtb"))?, PORT, ans, Params::DEFAULT)?;
    let acked = || {
        s.paths().is_ok_and(|ps| {
            ps.iter()
                .all(|p| p.phase() == Phase::Connected && p.latency_ns() > 0)
        })
    };
    let t = wait_for(60, acked);
    check(t.is_some(), "reconnected, heartbeats acknowledged")?;
    check(
        ev.up.load(Ordering::Relaxed) > 0,
        "the ULP heard the link up",
    )?;
    // Two periods later, still up.
    rdma::kshim::time::msleep(12_000);
    check(acked(), "it stays up")?;
    s.close();
    Ok(())
}

/// The silent server's ULP: every request succeeds, answered in softirq.
struct Always;

impl SrvOps for Always {
    fn rdma_ev(&self, _path: &[u8], _req: &SrvRequest<'_>) -> i32 {
        0
    }

    fn context(&self) -> EvContext {
        EvContext::Softirq
    }
}

const CASES: &[FnCase<Ctx>] = &[
    case!(two_paths(_)),
    case!(open_device(_)),
    case!(round_robin(_)),
    case!(min_inflight(_)),
    case!(min_latency(_)),
    case!(policy_text(_)),
    case!(both_invalidate_modes(_)),
    case!(peer_stops_heartbeats(_)),
];

impl Load {
    /// SESS_INFO and OPEN of the server's device.
    fn reopen(&self) -> Result {
        let r = Rnbd::new(&self.sess)?;
        check(r.sess_info()? == 2, "RNBD 2")?;
        let d = r.open(b"ours")?;
        self.dev.store(u64::from(d.id), Ordering::Relaxed);
        Ok(())
    }

    /// N writes of BS bytes in flight, then N reads, compared.
    fn round(&self, seed: u32) -> Result {
        let r = Rnbd::new(&self.sess)?;
        let dev = self.dev.load(Ordering::Relaxed) as u32;
        fill(&self.a, 0, N * BS, seed)?;
        self.b.fill(0, N * BS, 0)?;
        let sector = u64::from(seed % 64) * (N * BS / 512) as u64;
        r.io_many(dev, Dir::Write, sector, &self.a, BS, N)?;
        r.io_many(dev, Dir::Read, sector, &self.b, BS, N)?;
        if !same(&self.a, 0, &self.b, 0, N * BS)? {
            self.mismatches.fetch_add(1, Ordering::Relaxed);
            return Err(EIO);
        }
        Ok(())
    }

    fn failovers(&self) -> u64 {
        self.sess.paths().map_or(0, |ps| {
            ps.iter()
                .map(|p| p.stats.failovers.load(Ordering::Relaxed))
                .sum()
        })
    }

    fn up(&self) -> usize {
        self.sess.paths().map_or(0, |ps| {
            ps.iter().filter(|p| p.phase() == Phase::Connected).count()
        })
    }

    /// The load, until stopped.
    fn run_load(&self) {
        let mut seed = 100u32;
        while !self.stop.load(Ordering::Acquire) {
            if self.link.up_again.swap(false, Ordering::AcqRel) {
                match self.reopen() {
                    Ok(()) => pr_info!("rtrs mpath: device opened again\n"),
                    Err(e) => {
                        pr_info!("rtrs mpath: open again failed ({})\n", e.to_errno());
                        self.link.up_again.store(true, Ordering::Release);
                    }
                }
            }
            seed = seed.wrapping_add(1);
            match self.round(seed) {
                Ok(()) => {}
                Err(_) => {
                    if self.stop.load(Ordering::Acquire) {
                        break;
                    }
                    self.io_errors.fetch_add(1, Ordering::Relaxed);
                    rdma::kshim::time::msleep(200);
                }
            }
            self.rounds.fetch_add(1, Ordering::Relaxed);
            self.report();
        }
        self.report();
        *self.done.lock() = true;
        self.done_cv.notify_all();
    }

    fn report(&self) {
        pr_info!(
            "rtrs mpath: {} rounds, {} IO errors, {} mismatches, {} failovers, up {}\n",
            self.rounds.load(Ordering::Relaxed),
            self.io_errors.load(Ordering::Relaxed),
            self.mismatches.load(Ordering::Relaxed),
            self.failovers(),
            self.up()
        );
    }

    /// Stops the load, closing the session under its IO first.
    fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.sess.close();
        let mut done = self.done.lock();
        while !*done {
            let _ = self
                .done_cv
                .wait_interruptible_timeout(&mut done, msecs_to_jiffies(1000));
        }
    }
}

struct MpathTest {
    load: Arc<Load>,
}

impl kernel::Module for MpathTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut c = Ctx { load: None };
        let r = ktap::run(CASES, &mut c);
        let load = c.load.take().ok_or(EINVAL)?;
        r?;
        workqueue::system_unbound()
            .enqueue(load.clone())
            .map_err(|_| EBUSY)?;
        Ok(MpathTest { load })
    }
}

impl Drop for MpathTest {
    fn drop(&mut self) {
        self.load.stop();
        // The load's work said it was done, but its code still runs until
        // the work returns (and may drop the last reference to the load):
        // this module's code must outlive it.
        rdma::kshim::work::flush(&self.load.work);
        pr_info!("rtrs mpath: stopped\n");
    }
}
