// SPDX-License-Identifier: GPL-2.0

//! `make bench`: tagged messages over our rxe beside plain SENDs of the
//! same sizes (the kernel's rxe has no tag matching to run against).
//!
//! `selftests/bench.sh` loads it on our devices `rbo0` (10.83.0.1) and
//! `rbo1` (10.83.0.2); each workload runs in loopback (both QPs on `rbo0`)
//! and across the veth pair, path MTU 4096, three times, tagged and plain
//! taking turns:
//!
//! - `tm_eager` 64 B and 4 KiB: eager messages (the TMH and the payload in
//!   one SEND) to an RC QP of a TM SRQ, 64 in flight, each with its own
//!   exact tag listed beforehand (a buffer re-listed, unsignaled, as its
//!   message completes); plain: SENDs of the payload's size to an RC QP
//!   with its own receive queue, 64 in flight;
//! - `tm_rndv` 1 MiB: rendezvous requests, the receiver reading 1 MiB
//!   from the sender and sending a FIN, 2 in flight; plain: SENDs of 1 MiB,
//!   2 in flight.
//!
//! Each run prints `bench: tagged|plain PATH TEST SIZE ITERATIONS
//! NANOSECONDS`, from the first post to the last completion (for a
//! rendezvous: its buffer's TM_DATA_VALID and the sender's FIN);
//! `scripts/bench-table.awk` makes the rows.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::{EAGAIN, EINVAL};
use kernel::prelude::*;
use kernel::time::Ktime;

use rdma::kshim::time;
use rdma::spec::attr::{Gid, Mtu};
use rdma::spec::opcodes::{WcFlags, WcOpcode, WcStatus};
use rdma::spec::tm::header::{TmhOp, RNDV_HDRS_LEN, TMH_LEN};
use rdma::verbs::qp::QpCap;
use rdma::verbs::srq::tm::{OpsKind, OpsWr, TmCap};
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{RecvWr, SendOp, SendWr};

#[path = "../../lib/ktap.rs"]
mod ktap;

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{End, Opts, Port};

#[path = "../../lib/verify.rs"]
mod verify;

mod tm;
use tm::{rvh, tm_pair, tmh, TmPair, FIN_AT, RNDV_DATA};

module! {
    type: RxeTmBench,
    name: "rdma_rxe_tm_bench",
    author: "rdma-rs developers",
    description: "make bench: tagged messages over rdma_rs_rxe beside plain SENDs",
    license: "GPL",
}

/// Eager messages in flight.
const EAGER_FLIGHT: u64 = 64;
/// Rendezvous (and 1 MiB SENDs) in flight.
const RNDV_FLIGHT: u64 = 2;
/// Room of an eager buffer.
const SLOT: usize = 4096;
/// The rendezvous size.
const MIB: usize = 1 << 20;
/// Workloads: (test, size, iterations).
const RUNS: [(&str, usize, u64); 3] = [
    ("tm_eager", 64, 4096),
    ("tm_eager", 4096, 2048),
    ("tm_rndv", MIB, 16),
];
/// Runs of each workload on each side.
const REPEAT: u32 = 3;
/// A run that makes no progress for this long has stalled.
const STALL_NS: i64 = 10_000_000_000;

const OPTS: Opts = Opts {
    buf_len: tm::BUF,
    path_mtu: Mtu::Mtu4096,
    cqe: 4096,
    cap: QpCap {
        max_send_wr: 128,
        max_recv_wr: 128,
        max_send_sge: 4,
        max_recv_sge: 4,
        max_inline_data: 0,
    },
    timeout: 20,
    ..rc::RC
};

fn now() -> i64 {
    Ktime::ktime_get().to_ns()
}

/// Stall detection while a run spins.
struct Spin {
    last: i64,
    spins: u32,
}

impl Spin {
    fn new() -> Spin {
        Spin {
            last: now(),
            spins: 0,
        }
    }

    fn moved(&mut self, n: usize) -> Result {
        if n > 0 {
            self.last = now();
            return Ok(());
        }
        if now() - self.last > STALL_NS {
            pr_err!("rdma_rxe_tm_bench: stalled\n");
            return Err(EAGAIN);
        }
        self.spins += 1;
        if self.spins % 64 == 0 {
            time::cond_resched();
        }
        Ok(())
    }
}

fn failed<T>(wc: &Wc) -> Result<T> {
    pr_err!(
        "rdma_rxe_tm_bench: wr_id {:#x} opcode {:?} status {:?}\n",
        wc.wr_id,
        wc.opcode,
        wc.status
    );
    Err(EINVAL)
}

/// Lists the tagged buffer of message `k` (tag `k`), unsignaled: `len`
/// bytes at `off`.
fn list(p: &TmPair, k: u64, off: usize, len: usize) -> Result {
    let sg = [p.rx.buf.sge(off, len as u32, p.rx.mr.lkey())?];
    let mut op = [OpsWr {
        wr_id: k,
        kind: OpsKind::Add {
            buf: RecvWr {
                wr_id: k,
                cqe: None,
                sg: &sg,
            },
            tag: k,
            mask: u64::MAX,
        },
        signaled: false,
        unexpected_cnt: None,
        handle: 0,
    }];
    p.rx.srq.core().post_ops(&mut op).map_err(|(_, e)| e)
}

/// Tagged eager messages of `size` bytes: the nanoseconds.
fn eager(p: &TmPair, size: usize, n: u64) -> Result<i64> {
    let slots = EAGER_FLIGHT as usize;
    for k in 0..EAGER_FLIGHT.min(n) {
        list(p, k, (k as usize % slots) * SLOT, size)?;
    }
    let (mut listed, mut posted, mut sent, mut done) = (EAGER_FLIGHT.min(n), 0u64, 0u64, 0u64);
    let mut wcs: [Wc; 16] = Default::default();
    let mut spin = Spin::new();
    let start = now();
    while done < n || sent < n {
        while posted < listed && posted - sent < EAGER_FLIGHT {
            // The sender's staging slot is free: its SEND completed.
            let at = (posted as usize % (2 * slots)) * (SLOT + TMH_LEN);
            p.tx.buf.write(at, &tmh(TmhOp::Eager, 0, posted))?;
            let sg = [p.tx.sge(at, TMH_LEN + size)?];
            p.tx.qp
                .post_send(&[SendWr::new(posted, SendOp::Send, &sg)])
                .map_err(|(_, e)| e)?;
            posted += 1;
        }
        let a = p.tx.cq.poll(&mut wcs);
        for wc in &wcs[..a] {
            if wc.status != WcStatus::Success {
                return failed(wc);
            }
        }
        sent += a as u64;
        let b = p.rx.cq.poll(&mut wcs);
        for wc in &wcs[..b] {
            if wc.status != WcStatus::Success || wc.opcode != WcOpcode::TmRecv {
                return failed(wc);
            }
            // A message of more than one packet: TM_MATCH first.
            if !wc.wc_flags.contains(WcFlags::TM_DATA_VALID) {
                continue;
            }
            done += 1;
            if listed < n {
                list(p, listed, (wc.wr_id as usize % slots) * SLOT, size)?;
                listed += 1;
            }
        }
        spin.moved(a + b)?;
    }
    Ok(now() - start)
}

/// Tagged rendezvous of 1 MiB: the nanoseconds.
fn rndv(p: &TmPair, n: u64) -> Result<i64> {
    let slots = RNDV_FLIGHT as usize;
    for k in 0..RNDV_FLIGHT.min(n) {
        list(p, k, k as usize % slots * MIB, MIB)?;
    }
    let (mut listed, mut posted, mut sent, mut fins, mut done) =
        (RNDV_FLIGHT.min(n), 0u64, 0u64, 0u64, 0u64);
    let mut wcs: [Wc; 16] = Default::default();
    let mut spin = Spin::new();
    let start = now();
    while done < n || sent < n || fins < n {
        while posted < listed && posted - fins.min(sent) < RNDV_FLIGHT {
            let at = (posted as usize % (2 * slots)) * 64;
            p.tx.buf.write(at, &tmh(TmhOp::Rndv, 0, posted))?;
            p.tx.buf.write(
                at + TMH_LEN,
                &rvh(p.tx.buf.addr(RNDV_DATA), p.tx.mr.rkey(), MIB as u32),
            )?;
            let fin = [p.tx.sge(FIN_AT + at, 64)?];
            p.tx.qp
                .post_recv(&[RecvWr {
                    wr_id: posted,
                    cqe: None,
                    sg: &fin,
                }])
                .map_err(|(_, e)| e)?;
            let sg = [p.tx.sge(at, RNDV_HDRS_LEN)?];
            p.tx.qp
                .post_send(&[SendWr::new(posted, SendOp::Send, &sg)])
                .map_err(|(_, e)| e)?;
            posted += 1;
        }
        let a = p.tx.cq.poll(&mut wcs);
        for wc in &wcs[..a] {
            match (wc.status, wc.opcode) {
                (WcStatus::Success, WcOpcode::Send) => sent += 1,
                (WcStatus::Success, WcOpcode::Recv) => fins += 1,
                _ => return failed(wc),
            }
        }
        let b = p.rx.cq.poll(&mut wcs);
        for wc in &wcs[..b] {
            if wc.status != WcStatus::Success || wc.opcode != WcOpcode::TmRecv {
                return failed(wc);
            }
            if wc.wc_flags.contains(WcFlags::TM_DATA_VALID) {
                done += 1;
                if listed < n {
                    list(p, listed, wc.wr_id as usize % slots * MIB, MIB)?;
                    listed += 1;
                }
            }
        }
        spin.moved(a + b)?;
    }
    Ok(now() - start)
}

/// Plain SENDs of `size` bytes, `flight` in flight: the nanoseconds.
fn plain(x: &End, y: &End, size: usize, n: u64, flight: u64) -> Result<i64> {
    let room = if size >= MIB { MIB } else { SLOT };
    let recv = |k: u64| -> Result {
        let sg = [y.sge((k % flight) as usize * room, size)?];
        y.qp.post_recv(&[RecvWr {
            wr_id: k,
            cqe: None,
            sg: &sg,
        }])
        .map_err(|(_, e)| e)
    };
    for k in 0..flight.min(n) {
        recv(k)?;
    }
    let (mut recvd, mut posted, mut sent, mut done) = (flight.min(n), 0u64, 0u64, 0u64);
    let mut wcs: [Wc; 16] = Default::default();
    let mut spin = Spin::new();
    let start = now();
    while done < n || sent < n {
        while posted < n && posted - sent < flight {
            let sg = [x.sge((posted % flight) as usize * room, size)?];
            x.qp.post_send(&[SendWr::new(posted, SendOp::Send, &sg)])
                .map_err(|(_, e)| e)?;
            posted += 1;
        }
        let a = x.cq.poll(&mut wcs);
        for wc in &wcs[..a] {
            if wc.status != WcStatus::Success {
                return failed(wc);
            }
        }
        sent += a as u64;
        let b = y.cq.poll(&mut wcs);
        for wc in &wcs[..b] {
            if wc.status != WcStatus::Success || wc.opcode != WcOpcode::Recv {
                return failed(wc);
            }
            done += 1;
            if recvd < n {
                recv(recvd)?;
                recvd += 1;
            }
        }
        spin.moved(a + b)?;
    }
    Ok(now() - start)
}

fn report(side: &str, path: &str, test: &str, size: usize, n: u64, ns: i64) {
    pr_info!("bench: {} {} {} {} {} {}\n", side, path, test, size, n, ns);
}

fn port(name: &'static kernel::str::CStr, host: u8) -> Port<'static> {
    Port {
        name,
        gid: Gid::from_ipv4([10, 83, 0, host]),
    }
}

fn bench() -> Result {
    for (path, b) in [
        ("loopback", port(c_str!("rbo0"), 1)),
        ("veth", port(c_str!("rbo1"), 2)),
    ] {
        let a = port(c_str!("rbo0"), 1);
        let cap = TmCap {
            max_num_tags: 256,
            max_ops: 16,
        };
        for (test, size, n) in RUNS {
            for _ in 0..REPEAT {
                // Fresh QPs for each run: nothing left over from the last.
                let p = tm_pair(a, b, &OPTS, cap, 16)?;
                let ns = if test == "tm_rndv" {
                    rndv(&p, n)?
                } else {
                    eager(&p, size, n)?
                };
                report("tagged", path, test, size, n, ns);
                drop(p);
                let (x, y) = rc::pair(a, b, &OPTS)?;
                let flight = if test == "tm_rndv" {
                    RNDV_FLIGHT
                } else {
                    EAGER_FLIGHT
                };
                let ns = plain(&x, &y, size, n, flight)?;
                report("plain", path, test, size, n, ns);
            }
        }
    }
    Ok(())
}

struct RxeTmBench;

impl kernel::Module for RxeTmBench {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        bench()?;
        pr_info!("bench: done\n");
        Ok(RxeTmBench)
    }
}
