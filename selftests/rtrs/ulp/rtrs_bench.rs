// SPDX-License-Identifier: GPL-2.0

//! The RTRS benchmark's load on our RTRS (`make bench`; the same load on
//! the kernel's RTRS is selftests/rtrs/cbench/rtrs_cbench.c).
//!
//! At load it opens our server in the namespace of our rxe `rbo1`
//! (10.83.0.2), which answers every request at once from its chunk memory,
//! and a session of our client to it from the namespace of `rbo0`
//! (selftests/bench.sh makes both). Then it runs the workloads, 64 requests
//! in flight: 4 KiB at random offsets and 128 KiB one after the other,
//! written and read; first with the server's `always_invalidate` on, then
//! off. One line per workload:
//!
//! ```text
//! bench: ours rtrs-<Y|N> <test> <size> <requests> <nanoseconds>
//! ```
//!
//! Both servers have 128 chunks of 256 KiB, so that a 128 KiB request fits
//! (a 128 KiB chunk carries at most 124 KiB of data). A failed request fails
//! the load, and nothing is printed.

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicU64, Ordering};

use kernel::c_str;
use kernel::error::code::{EAGAIN, EINVAL, EIO};
use kernel::prelude::*;
use kernel::sync::{new_condvar, Arc, CondVar};
use kernel::time::{msecs_to_jiffies, Ktime};

use rdma::cma::{IpAddr, SockAddr};
use rdma::kshim::mem::Buffer;
use rdma::kshim::sync::SpinLockIrq;
use rdma::verbs::mr::BufSlice;
use rtrs::clt::{ConType, Config, Dir, IoDone, PathAddr, Session};
use rtrs::srv::{EvContext, Params, Server, SrvOps, SrvRequest};

#[path = "rnbd_clt.rs"]
mod rnbd_clt;
use rnbd_clt::ns_of;

module! {
    type: RtrsBench,
    name: "rtrs_bench",
    author: "rdma-rs developers",
    description: "The RTRS benchmark's load on our RTRS",
    license: "GPL",
}

/// Requests in flight.
const QD: usize = 64;
/// The largest request.
const MAX: usize = 128 * 1024;
/// The length of the user message (offset, length, write).
const MSG: usize = 16;
/// A load that makes no progress for this long has stalled.
const STALL_SECS: u32 = 60;

/// The workloads: name, direction, random offsets, size, requests. The
/// same as rtrs_cbench.c's.
const WORKLOADS: [(&str, Dir, bool, usize, usize); 4] = [
    ("randwrite", Dir::Write, true, 4096, 8192),
    ("randread", Dir::Read, true, 4096, 8192),
    ("seqwrite", Dir::Write, false, MAX, 1024),
    ("seqread", Dir::Read, false, MAX, 1024),
];

fn now() -> i64 {
    Ktime::ktime_get().to_ns()
}

/// The server's ULP: every request answered at once, as it came, in the
/// softirq its completion comes in.
struct Answer {
    bad: AtomicU64,
}

impl SrvOps for Answer {
    fn rdma_ev(&self, _path: &[u8], req: &SrvRequest<'_>) -> i32 {
        if req.usr.len() == MSG {
            0
        } else {
            self.bad.fetch_add(1, Ordering::Relaxed);
            -22
        }
    }

    fn context(&self) -> EvContext {
        EvContext::Softirq
    }
}

/// The free slots of the load (a slot: a place for one request's data)
/// and the failed requests.
struct State {
    free: [usize; QD],
    nfree: usize,
    errors: u32,
}

impl State {
    fn take(&mut self) -> Option<usize> {
        self.nfree = self.nfree.checked_sub(1)?;
        Some(self.free[self.nfree])
    }

    fn give(&mut self, slot: usize) {
        if let Some(f) = self.free.get_mut(self.nfree) {
            *f = slot;
            self.nfree += 1;
        }
    }
}

#[pin_data]
struct Flight {
    #[pin]
    st: SpinLockIrq<State>,
    #[pin]
    cv: CondVar,
}

impl IoDone for Flight {
    fn done(&self, tag: u64, errno: i32) {
        let mut g = self.st.lock();
        if errno != 0 {
            g.errors += 1;
        }
        g.give(tag as usize);
        drop(g);
        self.cv.notify_all();
    }
}

impl Flight {
    fn new() -> Result<Arc<Flight>> {
        let mut free = [0; QD];
        for (i, f) in free.iter_mut().enumerate() {
            *f = i;
        }
        let st = State {
            free,
            nfree: QD,
            errors: 0,
        };
        Arc::pin_init(
            pin_init!(Flight {
                st <- rdma::new_spinlock_irq!(st, "rtrs_bench::Flight::st"),
                cv <- new_condvar!("rtrs_bench::Flight::cv"),
            }),
            GFP_KERNEL,
        )
    }

    /// Waits until `f` of the state holds, then returns what it took.
    fn wait<T>(&self, mut f: impl FnMut(&mut State) -> Option<T>) -> Result<T> {
        let mut g = self.st.lock();
        let mut left = STALL_SECS * 10;
        loop {
            if let Some(v) = f(&mut g) {
                return Ok(v);
            }
            if left == 0 {
                pr_err!("rtrs_bench: no progress for {} s\n", STALL_SECS);
                return Err(EAGAIN);
            }
            left -= 1;
            let _ = self
                .cv
                .wait_interruptible_timeout(&mut g, msecs_to_jiffies(100));
        }
    }
}

/// A small generator of random offsets (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One workload on a connected session.
struct Load<'a> {
    sess: &'a Session,
    flight: Arc<Flight>,
    buf: Arc<Buffer>,
    rng: Rng,
}

impl Load<'_> {
    /// `count` requests of `size` bytes in direction `dir`, `QD` in
    /// flight: the nanoseconds they took.
    fn run(&mut self, dir: Dir, random: bool, size: usize, count: usize) -> Result<i64> {
        let t0 = now();
        let mut next: u64 = 0;
        let mut sent = Ok(());
        for _ in 0..count {
            let slot = self.flight.wait(State::take)?;
            if random {
                next = (self.rng.next() % (1 << 18)) * size as u64;
            }
            let mut msg = [0u8; MSG];
            msg[..8].copy_from_slice(&next.to_le_bytes());
            msg[8..12].copy_from_slice(&(size as u32).to_le_bytes());
            msg[12..].copy_from_slice(&u32::from(dir == Dir::Write).to_le_bytes());
            next += size as u64;
            let done: Arc<dyn IoDone> = self.flight.clone();
            let data = [BufSlice {
                buf: &self.buf,
                offset: slot * MAX,
                len: size,
            }];
            sent = self
                .sess
                .permit(ConType::Io, true)
                .and_then(|p| self.sess.request(dir, p, &msg, &data, done, slot as u64));
            if sent.is_err() {
                // Not sent: the slot is free again at once.
                self.flight.done(slot as u64, -5);
                break;
            }
        }
        let errors = self.flight.wait(|s| {
            if s.nfree == QD {
                Some(core::mem::take(&mut s.errors))
            } else {
                None
            }
        })?;
        sent?;
        if errors != 0 {
            pr_err!("rtrs_bench: {} requests failed\n", errors);
            return Err(EIO);
        }
        Ok(now() - t0)
    }
}

/// Our server and a session to it, with `always_invalidate` as given: one
/// line per workload.
fn bench(inval: bool) -> Result {
    let port = if inval { 1241 } else { 1242 };
    let answer = Arc::new(
        Answer {
            bad: AtomicU64::new(0),
        },
        GFP_KERNEL,
    )?;
    let params = Params {
        queue_depth: 128,
        chunk_size: 256 * 1024,
        always_invalidate: inval,
        ..Params::DEFAULT
    };
    let ops: Arc<dyn SrvOps> = answer.clone();
    let _server = Server::open_with(ns_of(c_str!("rbo1"))?, port, ops, params)?;
    let paths = [PathAddr {
        src: None,
        dst: SockAddr {
            ip: IpAddr::V4([10, 83, 0, 2]),
            port,
        },
    }];
    let mut cfg = Config::new(b"rtrs_bench", &paths);
    cfg.max_reconnect_attempts = 0;
    let sess = Session::open(ns_of(c_str!("rbo0"))?, &cfg, None)?;
    let attrs = sess.query()?;
    if (attrs.max_io_size as usize) < MAX || (attrs.queue_depth as usize) < QD {
        pr_err!(
            "rtrs_bench: the server takes {} bytes, {} requests\n",
            attrs.max_io_size,
            attrs.queue_depth
        );
        sess.close();
        return Err(EINVAL);
    }
    let mut load = Load {
        sess: &sess,
        flight: Flight::new()?,
        buf: Buffer::new(QD * MAX)?,
        rng: Rng(0x9e37_79b9_7f4a_7c15),
    };
    let mut ns = [0i64; WORKLOADS.len()];
    // Warm up: every connection and permit used once.
    let mut res = load.run(Dir::Write, true, 4096, 4 * QD).map(|_| ());
    for (i, w) in WORKLOADS.iter().enumerate() {
        if res.is_err() {
            break;
        }
        res = load.run(w.1, w.2, w.3, w.4).map(|t| ns[i] = t);
        if let Err(e) = res {
            pr_err!("rtrs_bench: {} failed: {:?}\n", w.0, e);
        }
    }
    sess.close();
    res?;
    let bad = answer.bad.load(Ordering::Relaxed);
    if bad != 0 {
        pr_err!("rtrs_bench: the server saw {} bad messages\n", bad);
        return Err(EIO);
    }
    let m = if inval { "Y" } else { "N" };
    for (i, w) in WORKLOADS.iter().enumerate() {
        pr_info!("bench: ours rtrs-{} {} {} {} {}\n", m, w.0, w.3, w.4, ns[i]);
    }
    Ok(())
}

struct RtrsBench;

impl kernel::Module for RtrsBench {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        bench(true)?;
        bench(false)?;
        Ok(RtrsBench)
    }
}
