// SPDX-License-Identifier: GPL-2.0

//! `make bench`: the same kernel-space workload on our rxe and on the
//! kernel's own `rdma_rxe`, in one guest boot.
//!
//! `selftests/bench.sh` makes two of our devices, `rbo0` (10.83.0.1) and
//! `rbo1` (10.83.0.2), on a veth pair between two namespaces, and two of
//! the kernel's, `cbo0` (10.84.0.1) and `cbo1` (10.84.0.2), on a veth pair
//! in the initial namespace (where `rdma_rxe` listens; policy routing sends
//! each device's packets out of its own end). Every workload runs on both
//! stacks through [`peer::Endpoint`], ours straight on `rdma_core`, theirs
//! through the C module `rxe_cpeer` on the kernel's verbs, once in loopback
//! (two QPs of one device) and once across the pair, path MTU 4096:
//!
//! - bandwidth of RDMA WRITE, RDMA READ and SEND at 64 B, 4 KiB, 64 KiB and
//!   1 MiB with 64 requests outstanding (perftest's `-t 64`), every request
//!   signaled; the 64-byte WRITE run also gives the message rate; the
//!   benchmark polls for completions, and yields the CPU after each poll
//!   that found none (see [`Spin`]);
//! - SEND ping-pong latency at 8 bytes (half the round trip);
//! - CPU time per byte: WRITE, READ and SEND of 64 KiB (2048 of them) and
//!   WRITE of 4 KiB (16384), 64 in flight, but the benchmark sleeps (50 to
//!   100 us) instead of spinning while it waits for completions, and the
//!   row is the time the guest's CPU was not idle during the run
//!   (`cpu-write` and so on: wall time less the idle time the tick
//!   accounted);
//! - throughput with 1, 4, 16 and 64 QPs: 4 KiB WRITEs, 64 in flight in
//!   all, an even share on each QP (`1qp` to `64qp`), each QP on its own
//!   endpoints (PD, CQs, MR);
//! - and first the guest's memcpy bandwidth, the ceiling of a software
//!   provider, and the memory one QP, one CQ and one MR take on each
//!   stack (`memory.rs` says how it is computed).
//!
//! Each workload runs three times on each stack, the two stacks taking
//! turns; each run prints `bench: STACK PATH TEST SIZE ITERATIONS
//! NANOSECONDS` on the kernel log, and `scripts/bench.sh` turns them into
//! the table (the median of the three). A failed completion or a stall
//! ends that run: it is reported as `bench: STACK PATH TEST SIZE failed
//! ERRNO` instead of a time, the stack's endpoints are made anew, and the
//! other runs go on; the module then fails to load, so the run is not
//! taken for a clean one, but the table keeps every row that ran.

#![deny(unsafe_code)]

use kernel::c_str;
use kernel::error::code::{EAGAIN, EINVAL, EIO, ENOMEM};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::time::Ktime;

use rdma::kshim::{time, usage};
use rdma::spec::attr::{Gid, Mtu};

#[path = "../../lib/rc.rs"]
mod rc;

#[allow(dead_code)]
mod peer;
// The C test peer's binding: the one module with `unsafe`.
#[allow(dead_code)]
mod cpeer_sys;
mod memory;
use peer::{Completion, Endpoint, Info, Op, Ours, Theirs, Wr};

module! {
    type: RxeBench,
    name: "rdma_rxe_bench",
    author: "rdma-rs developers",
    description: "make bench: rdma_rs_rxe against the kernel's rdma_rxe",
    license: "GPL",
}

/// Requests in flight in the bandwidth runs.
const OUTSTANDING: u32 = 64;
/// Queue depth: room for the outstanding sends and twice as many receives.
const DEPTH: u32 = 2 * OUTSTANDING;
/// The largest message.
const MAX: usize = 1 << 20;
/// A run that makes no progress for this long has stalled.
const STALL_NS: i64 = 10_000_000_000;

/// Bandwidth runs: (message size, iterations).
const SIZES: [(usize, u32); 4] = [(64, 4096), (4096, 2048), (65536, 256), (MAX, 32)];
/// Ping-pong round trips.
const PINGS: u32 = 2000;

fn now() -> i64 {
    Ktime::ktime_get().to_ns()
}

/// CPU-time runs: requests of 4 KiB, and of 64 KiB.
const CPU_ITERATIONS: [u32; 2] = [16384, 2048];
/// QP counts of the scaling rows, and their requests (4 KiB WRITEs).
const QPS: [(u32, &str); 4] = [(1, "1qp"), (4, "4qp"), (16, "16qp"), (64, "64qp")];
const QPS_ITERATIONS: u32 = 2048;

/// Tracks progress: `Err(EAGAIN)` once nothing moved for `STALL_NS`.
/// While the caller polls, each poll that found nothing lets every other
/// runnable task go first (`yield_now`): on the guest's one CPU the work
/// that makes the completions (either stack's QP work, the network's
/// softirq) then runs instead of sharing the CPU with the poll until the
/// scheduler's tick. Or, if it sleeps, it gives the CPU up for 50 to
/// 100 us each time nothing moved.
struct Spin {
    last: i64,
    spins: u32,
    sleeps: bool,
}

impl Spin {
    fn new() -> Spin {
        Spin {
            last: now(),
            spins: 0,
            sleeps: false,
        }
    }

    fn sleeping() -> Spin {
        Spin {
            sleeps: true,
            ..Spin::new()
        }
    }

    fn progressed(&mut self) {
        self.spins = 0;
        self.last = now();
    }

    fn idle(&mut self) -> Result {
        self.spins += 1;
        if self.sleeps {
            time::usleep(50, 100);
        } else {
            time::yield_now();
        }
        // Both ways above give the CPU up: only the stall is checked here.
        if self.sleeps || self.spins % 32 == 0 {
            if now() - self.last > STALL_NS {
                pr_err!("rdma_rxe_bench: no progress for 10 s\n");
                return Err(EAGAIN);
            }
        }
        Ok(())
    }
}

/// Takes completions of `e`'s send (or receive) CQ: how many, `EINVAL`
/// if one failed.
fn reap(e: &dyn Endpoint, recv: bool) -> Result<u32> {
    let mut wc = [Completion::default(); 8];
    let n = e.poll(recv, &mut wc);
    if let Some(bad) = wc[..n].iter().find(|c| c.status != 0) {
        pr_err!("rdma_rxe_bench: completion {:?}\n", bad);
        return Err(EINVAL);
    }
    Ok(n as u32)
}

/// `iterations` requests of `op` and `size` bytes from `a` to `b`, 64 in
/// flight: the nanoseconds from the first post to the last completion.
/// `spin` says how to wait.
fn bandwidth(
    a: &dyn Endpoint,
    b: &dyn Endpoint,
    op: Op,
    size: usize,
    iterations: u32,
    mut spin: Spin,
) -> Result<i64> {
    let peer = b.info();
    let wr = Wr::new(0, op, 0, size as u32).to(&peer, 0);
    let send = op == Op::Send;
    let mut recv_posted = 0;
    if send {
        while recv_posted < iterations.min(DEPTH) {
            b.post_recv(recv_posted as u64, 0, size as u32)?;
            recv_posted += 1;
        }
    }
    let (mut posted, mut done) = (0u32, 0u32);
    spin.progressed();
    let start = now();
    while done < iterations {
        while posted < iterations && posted - done < OUTSTANDING {
            a.post_send(&Wr {
                wr_id: posted as u64,
                ..wr
            })?;
            posted += 1;
        }
        let mut moved = reap(a, false)?;
        done += moved;
        if send {
            let got = reap(b, true)?;
            for _ in 0..got {
                if recv_posted < iterations {
                    b.post_recv(recv_posted as u64, 0, size as u32)?;
                    recv_posted += 1;
                }
            }
            moved += got;
        }
        if moved > 0 {
            spin.progressed();
        } else {
            spin.idle()?;
        }
    }
    let ns = now() - start;
    // Receives the run did not use (none when all went as planned).
    if send {
        while reap(b, true)? > 0 {}
    }
    Ok(ns)
}

/// [`bandwidth`] sleeping while it waits: the nanoseconds the guest's CPU
/// was busy from the first post to the last completion (wall time less
/// idle time, at least 1).
fn cpu_time(
    a: &dyn Endpoint,
    b: &dyn Endpoint,
    op: Op,
    size: usize,
    iterations: u32,
) -> Result<i64> {
    let idle = usage::cpu_idle_ns();
    let start = now();
    bandwidth(a, b, op, size, iterations, Spin::sleeping())?;
    let wall = now() - start;
    let idle = i64::try_from(usage::cpu_idle_ns().wrapping_sub(idle)).unwrap_or(i64::MAX);
    Ok((wall - idle).max(1))
}

/// `iterations` RDMA WRITEs of `size` bytes spread over the pairs of
/// `ends` (`a0, b0, a1, b1, ...`, from each `a` to its `b`),
/// [`OUTSTANDING`] in flight in all, the same share on each QP (at least
/// one): the nanoseconds from the first post to the last completion.
fn spread_writes(ends: &[&dyn Endpoint], size: usize, iterations: u32) -> Result<i64> {
    let pairs = ends.len() / 2;
    if pairs == 0 {
        return Err(EINVAL);
    }
    let share = (OUTSTANDING / pairs as u32).max(1);
    let mut flight = KVec::from_elem(0u32, pairs, GFP_KERNEL)?;
    let mut wrs = KVec::with_capacity(pairs, GFP_KERNEL)?;
    for p in 0..pairs {
        let peer = ends[2 * p + 1].info();
        wrs.push(
            Wr::new(0, Op::Write, 0, size as u32).to(&peer, 0),
            GFP_KERNEL,
        )?;
    }
    let (mut posted, mut done) = (0u32, 0u32);
    let mut spin = Spin::new();
    let start = now();
    while done < iterations {
        let mut moved = 0;
        for p in 0..pairs {
            let a = ends[2 * p];
            while posted < iterations && flight[p] < share {
                a.post_send(&Wr {
                    wr_id: posted as u64,
                    ..wrs[p]
                })?;
                posted += 1;
                flight[p] += 1;
            }
            let got = reap(a, false)?;
            flight[p] = flight[p].saturating_sub(got);
            moved += got;
        }
        done += moved;
        if moved > 0 {
            spin.progressed();
        } else {
            spin.idle()?;
        }
    }
    Ok(now() - start)
}

/// Waits for one receive on `e`, reaping its sends meanwhile.
fn await_recv(e: &dyn Endpoint, spin: &mut Spin) -> Result {
    loop {
        reap(e, false)?;
        if reap(e, true)? == 1 {
            spin.progressed();
            return Ok(());
        }
        spin.idle()?;
    }
}

/// `rounds` 8-byte SEND ping-pongs between `a` and `b`: the nanoseconds.
fn pingpong(a: &dyn Endpoint, b: &dyn Endpoint, rounds: u32) -> Result<i64> {
    for e in [a, b] {
        for i in 0..4 {
            e.post_recv(i, 4096, 64)?;
        }
    }
    let ping = Wr::new(1, Op::Send, 0, 8);
    let mut spin = Spin::new();
    let start = now();
    for _ in 0..rounds {
        a.post_send(&ping)?;
        await_recv(b, &mut spin)?;
        b.post_recv(0, 4096, 64)?;
        b.post_send(&ping)?;
        await_recv(a, &mut spin)?;
        a.post_recv(0, 4096, 64)?;
    }
    let ns = now() - start;
    for e in [a, b] {
        while reap(e, false)? > 0 {}
    }
    Ok(ns)
}

fn report(stack: &str, path: &str, test: &str, size: usize, iterations: u32, ns: i64) {
    pr_info!(
        "bench: {} {} {} {} {} {}\n",
        stack,
        path,
        test,
        size,
        iterations,
        ns
    );
}

/// The guest's memcpy bandwidth: 1 MiB copied 64 times.
fn memcpy_bandwidth() -> Result {
    let src = KVec::from_elem(0x5au8, MAX, GFP_KERNEL).map_err(|_| ENOMEM)?;
    let mut dst = KVec::from_elem(0u8, MAX, GFP_KERNEL).map_err(|_| ENOMEM)?;
    dst.copy_from_slice(&src);
    let start = now();
    for _ in 0..64 {
        dst.copy_from_slice(&src);
        core::hint::black_box(&mut dst);
    }
    report("guest", "memory", "memcpy", MAX, 64, now() - start);
    Ok(())
}

/// Where a stack's two endpoints live.
struct Place {
    stack: &'static str,
    dev0: &'static CStr,
    dev1: &'static CStr,
    net: [u8; 3],
}

const OURS: Place = Place {
    stack: "ours",
    dev0: c_str!("rbo0"),
    dev1: c_str!("rbo1"),
    net: [10, 83, 0],
};

const THEIRS: Place = Place {
    stack: "theirs",
    dev0: c_str!("cbo0"),
    dev1: c_str!("cbo1"),
    net: [10, 84, 0],
};

fn gid(net: [u8; 3], host: u8) -> Gid {
    Gid::from_ipv4([net[0], net[1], net[2], host])
}

/// Two connected RC endpoints of `place`, with buffers of `len` bytes: on
/// one device, or across the pair.
fn endpoints<E: Endpoint>(
    place: &Place,
    loopback: bool,
    len: usize,
    new: fn(&CStr, Gid, bool, usize, u32) -> Result<E>,
) -> Result<(E, E)> {
    let (dev1, host1) = if loopback {
        (place.dev0, 1)
    } else {
        (place.dev1, 2)
    };
    let mut a = new(place.dev0, gid(place.net, 1), false, len, DEPTH)?;
    let mut b = new(dev1, gid(place.net, host1), false, len, DEPTH)?;
    let (ai, bi): (Info, Info) = (a.info(), b.info());
    a.connect(&bi, 100, 200, Mtu::Mtu4096)?;
    b.connect(&ai, 200, 100, Mtu::Mtu4096)?;
    Ok((a, b))
}

const TESTS: [(&str, Op); 3] = [("write", Op::Write), ("read", Op::Read), ("send", Op::Send)];

/// Times each workload is run on each stack; the table takes the median.
const REPEAT: u32 = 3;

/// A workload: its figure (nanoseconds), from connected endpoints `a0,
/// b0, a1, b1, ...`.
type Workload<'a> = &'a dyn Fn(&[&dyn Endpoint]) -> Result<i64>;

/// One stack's pairs of endpoints on one path, made again after a failed
/// run (whose QPs are left in error).
struct Side<E: Endpoint> {
    place: &'static Place,
    loopback: bool,
    /// How many pairs, and their buffers' size.
    count: usize,
    len: usize,
    new: fn(&CStr, Gid, bool, usize, u32) -> Result<E>,
    /// Empty until the first run, and after a failed one.
    pairs: KVec<(E, E)>,
}

impl<E: Endpoint> Side<E> {
    /// One pair, with buffers for the largest message.
    fn new(
        place: &'static Place,
        loopback: bool,
        new: fn(&CStr, Gid, bool, usize, u32) -> Result<E>,
    ) -> Self {
        Side::many(place, loopback, 1, MAX + 8192, new)
    }

    /// `count` pairs, each with buffers of `len` bytes.
    fn many(
        place: &'static Place,
        loopback: bool,
        count: usize,
        len: usize,
        new: fn(&CStr, Gid, bool, usize, u32) -> Result<E>,
    ) -> Self {
        Side {
            place,
            loopback,
            count,
            len,
            new,
            pairs: KVec::new(),
        }
    }

    /// One run of `workload` on this stack: its nanoseconds, or the error
    /// of a run that failed (the endpoints are then dropped, to be made
    /// anew for the next run).
    fn run(&mut self, workload: Workload<'_>) -> Result<i64> {
        if self.pairs.is_empty() {
            let mut pairs = KVec::with_capacity(self.count, GFP_KERNEL)?;
            for _ in 0..self.count {
                pairs.push(
                    endpoints(self.place, self.loopback, self.len, self.new)?,
                    GFP_KERNEL,
                )?;
            }
            self.pairs = pairs;
        }
        let mut ends: KVec<&dyn Endpoint> = KVec::with_capacity(2 * self.count, GFP_KERNEL)?;
        for (a, b) in self.pairs.iter() {
            ends.push(a, GFP_KERNEL)?;
            ends.push(b, GFP_KERNEL)?;
        }
        let ns = workload(&ends);
        drop(ends);
        if ns.is_err() {
            self.pairs = KVec::new();
        }
        ns
    }
}

/// Reports one run of a row: its time, or that it failed (`bench: STACK
/// PATH TEST SIZE failed ERRNO`), so that the table keeps its other rows.
/// Whether it ran.
fn row(stack: &str, path: &str, test: &str, size: usize, iterations: u32, ns: Result<i64>) -> bool {
    match ns {
        Ok(ns) => {
            report(stack, path, test, size, iterations, ns);
            true
        }
        Err(e) => {
            pr_info!(
                "bench: {} {} {} {} failed {}\n",
                stack,
                path,
                test,
                size,
                e.to_errno()
            );
            false
        }
    }
}

/// One row's runs: [`REPEAT`] of `workload` on each stack, ours and
/// theirs taking turns so that a slow spell of the guest does not fall on
/// one of them only, each reported by [`row`]. Whether all ran.
fn turns(
    ours: &mut Side<Ours>,
    theirs: &mut Side<Theirs>,
    (path, test, size, iterations): (&str, &str, usize, u32),
    workload: Workload<'_>,
) -> bool {
    let mut all = true;
    for _ in 0..REPEAT {
        all &= row(OURS.stack, path, test, size, iterations, ours.run(workload));
        all &= row(
            THEIRS.stack,
            path,
            test,
            size,
            iterations,
            theirs.run(workload),
        );
    }
    all
}

/// Every workload on one path (see [`turns`]). A run that fails is
/// reported as failed and the others go on. Whether all ran.
fn run(path: &str, loopback: bool) -> bool {
    let mut ours = Side::new(&OURS, loopback, Ours::new);
    let mut theirs = Side::new(&THEIRS, loopback, Theirs::new);
    let mut all = true;
    for (test, op) in TESTS {
        for (size, iterations) in SIZES {
            let workload =
                move |e: &[&dyn Endpoint]| bandwidth(e[0], e[1], op, size, iterations, Spin::new());
            all &= turns(
                &mut ours,
                &mut theirs,
                (path, test, size, iterations),
                &workload,
            );
        }
    }
    // CPU time, before the ping-pongs (which leave receives posted): the
    // 64 KiB runs of each operation, and 4 KiB WRITEs.
    let cpu_rows = [
        ("cpu-write", Op::Write, 4096, CPU_ITERATIONS[0]),
        ("cpu-write", Op::Write, 65536, CPU_ITERATIONS[1]),
        ("cpu-read", Op::Read, 65536, CPU_ITERATIONS[1]),
        ("cpu-send", Op::Send, 65536, CPU_ITERATIONS[1]),
    ];
    for (test, op, size, iterations) in cpu_rows {
        let workload = move |e: &[&dyn Endpoint]| cpu_time(e[0], e[1], op, size, iterations);
        all &= turns(
            &mut ours,
            &mut theirs,
            (path, test, size, iterations),
            &workload,
        );
    }
    let workload = |e: &[&dyn Endpoint]| pingpong(e[0], e[1], PINGS);
    all &= turns(
        &mut ours,
        &mut theirs,
        (path, "send_lat", 8, PINGS),
        &workload,
    );
    drop(ours);
    drop(theirs);
    all & run_qps(path, loopback)
}

/// The scaling rows of one path: 4 KiB WRITEs over 1, 4, 16 and 64 QPs.
fn run_qps(path: &str, loopback: bool) -> bool {
    let mut all = true;
    for (count, test) in QPS {
        let mut ours = Side::many(&OURS, loopback, count as usize, 8192, Ours::new);
        let mut theirs = Side::many(&THEIRS, loopback, count as usize, 8192, Theirs::new);
        let workload = |e: &[&dyn Endpoint]| spread_writes(e, 4096, QPS_ITERATIONS);
        all &= turns(
            &mut ours,
            &mut theirs,
            (path, test, 4096, QPS_ITERATIONS),
            &workload,
        );
    }
    all
}

/// The memory rows: bytes of RAM per QP, CQ and MR on each stack, the
/// stacks taking turns.
fn run_memory() -> bool {
    let mut all = true;
    for (name, kind) in memory::KINDS {
        for _ in 0..REPEAT {
            for (place, measure) in [
                (&OURS, memory::ours as fn(&CStr, _) -> _),
                (&THEIRS, memory::theirs),
            ] {
                let bytes = measure(place.dev0, kind).map(|b| i64::try_from(b).unwrap_or(i64::MAX));
                all &= row(
                    place.stack,
                    "memory",
                    name,
                    memory::DEPTH as usize,
                    memory::COUNT,
                    bytes,
                );
            }
        }
    }
    all
}

/// The whole benchmark; `EIO` at the end if a run failed.
fn bench() -> Result {
    memcpy_bandwidth()?;
    let mut all = run_memory();
    for (path, loopback) in [("loopback", true), ("veth", false)] {
        all &= run(path, loopback);
    }
    if all {
        Ok(())
    } else {
        pr_err!("rdma_rxe_bench: a run failed (its rows say which)\n");
        Err(EIO)
    }
}

struct RxeBench;

impl kernel::Module for RxeBench {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        bench()?;
        pr_info!("bench: done\n");
        Ok(RxeBench)
    }
}
