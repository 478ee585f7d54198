// SPDX-License-Identifier: GPL-2.0

//! Selftest: RC and UD traffic under random faults, for a bounded time.
//!
//! `faults.sh` makes `rxa` (10.78.3.1) and `rxb` (10.78.3.2) in two
//! namespaces joined by a veth pair, sets random faults on both devices
//! (loss, duplication, reordering, corruption, in both directions) and
//! loads this module once per fault profile.
//!
//! `rc_soak`: eight RC QP pairs between the two devices, every operation
//! (SEND and SEND with immediate, RDMA WRITE and WRITE with immediate,
//! READ, compare-and-swap, fetch-and-add, ATOMIC_WRITE, FLUSH) with
//! random sizes from 0 to 256 KiB, one request in flight per QP, for
//! [`SOAK_MS`]. Every byte is checked, every work request completes
//! exactly once and successfully, some receives are posted late so RNR
//! NAKs happen too, and a fetch-and-add counter that all QPs hammer
//! (one buffer on `rxb`, registered in each responder's PD) ends exact,
//! having handed out every value once.
//!
//! `ud_under_loss`: datagrams numbered and patterned; what arrives is
//! intact and numbered within what was sent (duplicates may come: UD does
//! not suppress them), what is lost the script finds in the counters.

#![forbid(unsafe_code)]

use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::time::{ktime_ms_delta, Ktime};

use rdma::kshim::mem::Buffer;
use rdma::kshim::time;
use rdma::spec::opcodes::{Access, WcFlags, WcOpcode, WcStatus};
use rdma::spec::qp_state::QpType;
use rdma::verbs::mr::Mr;
use rdma::verbs::qp::QpCap;
use rdma::verbs::wr::{FlushType, RecvWr, SendOp, SendWr, UdDest};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{pair, End, Opts, Port, RxePair};

#[path = "../../lib/verify.rs"]
mod verify;
use verify::{expect, fill_pattern, poll, quiet, same, Rng};

module! {
    type: RxeSoakTest,
    name: "rdma_rxe_soak_test",
    author: "rdma-rs developers",
    description: "Selftest: RC and UD on rdma_rs_rxe under random faults",
    license: "GPL",
}

/// How long the RC soak posts new requests (ms). The whole of `make
/// check` pays this once per fault profile.
const SOAK_MS: i64 = 8000;
/// The seed of the operations, sizes and data (the faults have their own,
/// set by the script).
const SEED: u32 = 0x5eed;

/// QP pairs of the RC soak.
const QPS: usize = 8;
/// The largest message.
const MAX_LEN: usize = 256 * 1024;
/// Each end's buffer: a message region, a READ region, and atomic slots.
const BUF: usize = 2 * MAX_LEN + 4096;
/// Where READs read from and into.
const READ_AT: usize = MAX_LEN;
/// A QP's compare-and-swap and ATOMIC_WRITE slots.
const CAS_AT: usize = 2 * MAX_LEN;
const AW_AT: usize = 2 * MAX_LEN + 8;

/// RC ends for the soak: every right (FLUSH too), retries without limit for RNR, a
/// short ACK timeout.
const SOAK: Opts = Opts {
    buf_len: BUF,
    access: Access(rc::ALL_ACCESS.0 | Access::FLUSH_GLOBAL.0),
    mr_access: Access(rc::ALL_ACCESS.0 | Access::FLUSH_GLOBAL.0),
    // About 67 ms.
    timeout: 14,
    retry_cnt: 7,
    rnr_retry: 7,
    psn: 0xff_ff00,
    ..rc::RC
};

/// The operations of the soak, one drawn per request.
#[derive(Clone, Copy, Debug)]
enum Op {
    Send,
    SendImm,
    Write,
    WriteImm,
    Read,
    CmpSwap,
    FetchAdd,
    AtomicWrite,
    Flush,
}

const OPS: [Op; 9] = [
    Op::Send,
    Op::SendImm,
    Op::Write,
    Op::WriteImm,
    Op::Read,
    Op::CmpSwap,
    Op::FetchAdd,
    Op::AtomicWrite,
    Op::Flush,
];

/// One request in flight on a QP pair, and what checks it.
struct Flight {
    op: Op,
    len: usize,
    seed: u32,
    /// A receive posted after the request (so an RNR NAK may come first).
    late_recv: bool,
    /// Compare-and-swap: the value expected before, and swapped in.
    cas: (u64, u64),
    /// ATOMIC_WRITE: the value written.
    aw: u64,
}

/// The shared fetch-and-add counter: a buffer on `rxb`, registered in
/// every responder's PD (the MRs, by pair).
struct Counter {
    buf: Arc<Buffer>,
    mrs: KVec<Mr>,
    /// Which values fetch-and-add returned, one bit each.
    seen: KVec<u64>,
}

/// Requests the soak completes at most (the `seen` bitmap's size).
const MAX_ADDS: usize = 1 << 16;

fn post_one(x: &End, y: &End, f: &Flight, counter_rkey: u32, counter: &Counter) -> Result {
    let rkey = y.mr.rkey();
    let sg = [x.sge(0, f.len)?];
    let imm = f.seed;
    let recv_needed = matches!(f.op, Op::Send | Op::SendImm | Op::WriteImm);
    let post_recv = || {
        let rs = [y.sge(0, MAX_LEN)?];
        y.qp.post_recv(&[RecvWr {
            wr_id: 2,
            cqe: None,
            sg: &rs,
        }])
        .map_err(|(_, e)| e)
    };
    if recv_needed && !f.late_recv {
        post_recv()?;
    }
    let slot8 = [x.sge(CAS_AT, 8)?];
    let op = match f.op {
        Op::Send => SendOp::Send,
        Op::SendImm => SendOp::SendWithImm(imm),
        Op::Write => SendOp::Write {
            remote_addr: y.buf.addr(0),
            rkey,
        },
        Op::WriteImm => SendOp::WriteWithImm {
            remote_addr: y.buf.addr(0),
            rkey,
            imm,
        },
        Op::Read => SendOp::Read {
            remote_addr: y.buf.addr(READ_AT),
            rkey,
        },
        Op::CmpSwap => SendOp::CmpAndSwp {
            remote_addr: y.buf.addr(CAS_AT),
            rkey,
            compare: f.cas.0,
            swap: f.cas.1,
        },
        Op::FetchAdd => SendOp::FetchAndAdd {
            remote_addr: counter.buf.addr(0),
            rkey: counter_rkey,
            add: 1,
        },
        Op::AtomicWrite => {
            x.buf.write(AW_AT, &f.aw.to_ne_bytes())?;
            SendOp::AtomicWrite {
                remote_addr: y.buf.addr(AW_AT),
                rkey,
            }
        }
        Op::Flush => SendOp::Flush {
            remote_addr: y.buf.addr(0),
            rkey,
            length: f.len as u64,
            flush: FlushType {
                global: true,
                persistent: false,
            },
            whole_mr: false,
        },
    };
    let read_sg = [x.sge(READ_AT, f.len)?];
    let aw_sg = [x.sge(AW_AT, 8)?];
    let sgl: &[_] = match f.op {
        Op::Read => &read_sg,
        Op::CmpSwap | Op::FetchAdd => &slot8,
        Op::AtomicWrite => &aw_sg,
        Op::Flush => &[],
        _ => &sg,
    };
    x.qp.post_send(&[SendWr::new(1, op, sgl)])
        .map_err(|(_, e)| e)?;
    if recv_needed && f.late_recv {
        time::msleep(1);
        post_recv()?;
    }
    Ok(())
}

fn check_one(x: &End, y: &End, f: &Flight, counter: &mut Counter) -> Result {
    let want = match f.op {
        Op::Send | Op::SendImm => WcOpcode::Send,
        Op::Write | Op::WriteImm => WcOpcode::RdmaWrite,
        Op::Read => WcOpcode::RdmaRead,
        Op::CmpSwap => WcOpcode::CompSwap,
        Op::FetchAdd => WcOpcode::FetchAdd,
        Op::AtomicWrite => WcOpcode::AtomicWrite,
        Op::Flush => WcOpcode::Flush,
    };
    expect(&x.cq, 1, WcStatus::Success, Some(want))?;
    let mut v = [0u8; 8];
    match f.op {
        Op::Send | Op::SendImm | Op::WriteImm => {
            let r = expect(y.recv_cq(), 2, WcStatus::Success, None)?;
            let imm = r.wc_flags.contains(WcFlags::WITH_IMM);
            let want_imm = matches!(f.op, Op::SendImm | Op::WriteImm);
            check(
                imm == want_imm && (!imm || r.imm_data == f.seed),
                "immediate data",
            )?;
            check(r.byte_len as usize == f.len, "received length")?;
            check(same(&x.buf, 0, &y.buf, 0, f.len)?, "message bytes")?;
        }
        Op::Write => check(same(&x.buf, 0, &y.buf, 0, f.len)?, "written bytes")?,
        Op::Read => check(same(&x.buf, READ_AT, &y.buf, READ_AT, f.len)?, "read bytes")?,
        Op::CmpSwap => {
            x.buf.read(CAS_AT, &mut v)?;
            check(
                u64::from_ne_bytes(v) == f.cas.0,
                "compare-and-swap original",
            )?;
            y.buf.read(CAS_AT, &mut v)?;
            check(u64::from_ne_bytes(v) == f.cas.1, "swapped once")?;
        }
        Op::FetchAdd => {
            x.buf.read(CAS_AT, &mut v)?;
            let got = u64::from_ne_bytes(v) as usize;
            check(got < MAX_ADDS, "fetch-and-add value in range")?;
            let (w, bit) = (got / 64, 1u64 << (got % 64));
            check(counter.seen[w] & bit == 0, "each value handed out once")?;
            counter.seen[w] |= bit;
        }
        Op::AtomicWrite => {
            y.buf.read(AW_AT, &mut v)?;
            check(u64::from_ne_bytes(v) == f.aw, "ATOMIC_WRITE value")?;
        }
        Op::Flush => {}
    }
    Ok(())
}

fn rc_soak(a: Port<'_>, b: Port<'_>) -> Result {
    let mut ends = KVec::new();
    for _ in 0..QPS {
        ends.push(pair(a, b, &SOAK)?, GFP_KERNEL)?;
    }
    pr_info!(
        "soak: responder QPNs {} {}\n",
        ends[0].1.qp.qpn(),
        ends[QPS - 1].1.qp.qpn()
    );
    let buf = Buffer::new(64)?;
    let mut mrs = KVec::new();
    for (_, y) in ends.iter() {
        let access = Access::LOCAL_WRITE | Access::REMOTE_ATOMIC;
        mrs.push(
            Mr::reg_buffer(y.pd.core(), &buf, 0, 64, access)?,
            GFP_KERNEL,
        )?;
    }
    let mut counter = Counter {
        buf,
        mrs,
        seen: KVec::from_elem(0u64, MAX_ADDS / 64, GFP_KERNEL)?,
    };
    counter.buf.write(0, &0u64.to_ne_bytes())?;
    let mut rng = Rng(SEED);
    // What each pair's compare-and-swap slot holds.
    let mut cas_now = [0u64; QPS];
    let mut adds = 0u64;
    let mut done = 0u64;
    let start = Ktime::ktime_get();
    while ktime_ms_delta(Ktime::ktime_get(), start) < SOAK_MS {
        let mut flights = KVec::new();
        for (i, (x, y)) in ends.iter().enumerate() {
            let op = OPS[rng.below(OPS.len() as u32) as usize];
            // Mostly small, sometimes up to the largest.
            let len = if rng.below(4) == 0 {
                rng.below(MAX_LEN as u32 + 1)
            } else {
                rng.below(8193)
            } as usize;
            let f = Flight {
                op,
                len,
                seed: rng.next(),
                late_recv: rng.below(4) == 0,
                cas: (cas_now[i], u64::from(rng.next())),
                aw: u64::from(rng.next()) << 32 | u64::from(rng.next()),
            };
            match op {
                Op::Send | Op::SendImm | Op::Write | Op::WriteImm => {
                    fill_pattern(&x.buf, 0, len, f.seed)?
                }
                Op::Read => fill_pattern(&y.buf, READ_AT, len, f.seed)?,
                Op::CmpSwap => cas_now[i] = f.cas.1,
                Op::FetchAdd => adds += 1,
                _ => {}
            }
            post_one(x, y, &f, counter.mrs[i].rkey(), &counter)?;
            flights.push(f, GFP_KERNEL)?;
        }
        for ((x, y), f) in ends.iter().zip(flights.iter()) {
            if let Err(e) = check_one(x, y, f, &mut counter) {
                pr_err!("{:?} of {} bytes failed\n", f.op, f.len);
                return Err(e);
            }
            done += 1;
        }
        check(adds < MAX_ADDS as u64, "within the counter's range")?;
    }
    // Nothing completes twice or late.
    for (x, y) in ends.iter() {
        quiet(&x.cq, 0)?;
        quiet(y.recv_cq(), 0)?;
    }
    time::msleep(200);
    for (x, y) in ends.iter() {
        quiet(&x.cq, 0)?;
        quiet(y.recv_cq(), 0)?;
    }
    let mut v = [0u8; 8];
    counter.buf.read(0, &mut v)?;
    check(u64::from_ne_bytes(v) == adds, "the shared counter is exact")?;
    let handed = counter
        .seen
        .iter()
        .map(|w| u64::from(w.count_ones()))
        .sum::<u64>();
    check(handed == adds, "every value 0..adds handed out")?;
    pr_info!("soak: {} requests checked, {} fetch-and-adds\n", done, adds);
    Ok(())
}

/// UD ends: one QP each, a slot per datagram.
const UD: Opts = Opts {
    qp_type: QpType::Ud,
    mr_access: Access::LOCAL_WRITE,
    buf_len: DGRAMS * SLOT,
    cqe: 1024,
    cap: QpCap {
        max_send_wr: 64,
        max_recv_wr: 2 * DGRAMS as u32,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    },
    sq_sig_all: true,
    qkey: 0x600d,
    ..rc::RC
};
const DGRAMS: usize = 200;
const DGRAM_LEN: usize = 1000;
const SLOT: usize = DGRAM_LEN + 64;

fn ud_under_loss(a: Port<'_>, b: Port<'_>) -> Result {
    let x = End::new(a, &UD)?;
    x.ready()?;
    let y = End::new(b, &UD)?;
    y.ready()?;
    // Twice as many receives as datagrams: duplicates find one too.
    for i in 0..2 * DGRAMS {
        let rs = [y.buf.sge((i % DGRAMS) * SLOT, SLOT as u32, y.mr.lkey())?];
        y.qp.post_recv(&[RecvWr {
            wr_id: i as u64,
            cqe: None,
            sg: &rs,
        }])
        .map_err(|(_, e)| e)?;
    }
    let ah = x.ah(y.gid)?;
    let base = SEED;
    for i in 0..DGRAMS {
        let at = i * SLOT;
        x.buf.write(at, &(i as u32).to_ne_bytes())?;
        fill_pattern(&x.buf, at + 4, DGRAM_LEN - 4, base.wrapping_add(i as u32))?;
        let sg = [x.buf.sge(at, DGRAM_LEN as u32, x.mr.lkey())?];
        let mut wr = SendWr::new(i as u64, SendOp::Send, &sg);
        wr.ud = Some(UdDest {
            ah: ah.core(),
            remote_qpn: y.qp.qpn(),
            remote_qkey: 0x600d,
        });
        x.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
        let s = poll(&x.cq, 1)?;
        check(s[0].status == WcStatus::Success, "UD send completes")?;
    }
    time::msleep(500);
    let mut got = 0;
    let mut wcs: [rdma::verbs::wc::Wc; 16] = Default::default();
    let want = Buffer::new(DGRAM_LEN)?;
    loop {
        let n = y.recv_cq().poll(&mut wcs);
        if n == 0 {
            break;
        }
        for wc in &wcs[..n] {
            check(wc.status == WcStatus::Success, "receive status")?;
            check(wc.byte_len as usize == DGRAM_LEN + 40, "datagram length")?;
            // The slot may have been overwritten by a later copy of
            // another datagram only if more than DGRAMS arrived: check
            // the number it holds against its pattern.
            let at = (wc.wr_id as usize % DGRAMS) * SLOT + 40;
            let mut num = [0u8; 4];
            y.buf.read(at, &mut num)?;
            let k = u32::from_ne_bytes(num);
            check((k as usize) < DGRAMS, "a datagram that was sent")?;
            want.write(0, &num)?;
            fill_pattern(&want, 4, DGRAM_LEN - 4, base.wrapping_add(k))?;
            check(same(&y.buf, at, &want, 0, DGRAM_LEN)?, "datagram intact")?;
            got += 1;
        }
    }
    pr_info!("ud: {} of {} datagrams arrived\n", got, DGRAMS);
    check(
        got > 0 && got <= 2 * DGRAMS,
        "some arrived, none from nowhere",
    )
}

const CASES: &[FnCase<RxePair>] = &[
    case!("rc_soak", |p| rc_soak(p.a, p.b)),
    case!("ud_under_loss", |p| ud_under_loss(p.a, p.b)),
];

struct RxeSoakTest;

impl kernel::Module for RxeSoakTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut ports = RxePair::ipv4(3);
        ktap::run(CASES, &mut ports)?;
        Ok(RxeSoakTest)
    }
}
