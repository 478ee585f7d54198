// SPDX-License-Identifier: GPL-2.0

//! Selftest: the RC recovery paths, each driven by one chosen lost packet.
//!
//! `faults.sh` makes `rxa` (10.78.3.1) and `rxb` (10.78.3.2) in two
//! namespaces joined by a veth pair, and before loading this module arms
//! one-time faults (`hit=...@psn=...` in each device's configfs `fault`
//! file) on the PSNs the cases below use: every case connects its QPs with
//! its own first PSN, so each armed fault hits exactly the packet the case
//! is about. The requester is always on `rxa`, the responder on `rxb`.
//!
//! | case              | first PSN  | fault                        |
//! |-------------------|------------|------------------------------|
//! | go_back_n         | 0x100000   | rxb drops request 0x100003   |
//! | implied_nak       | 0x200000   | rxa drops READ response      |
//! | read_gap          | 0x300000   | rxa drops response 0x300001  |
//! | read_rewind       | 0x400000   | rxa drops response 0x400002  |
//! | atomic_replay     | 0x500000   | rxb drops the atomic ACK     |
//! | reordered_request | 0x600000   | rxb holds request 0x600001   |
//! | duplicate_request | 0x700000   | rxb gets request 0x700002 twice |
//!
//! (The other cases use 0x800000 to 0xb00000 and no fault.)
//!
//! Each case checks the data byte for byte and the completions; the script
//! then checks that every armed fault fired and that the counters of both
//! devices show the recovery (sequence NAKs, duplicates, retries). The
//! RNR cases need no fault: `rnr_retry` 7 waits as long as it takes, 0
//! fails at the first RNR NAK.

#![forbid(unsafe_code)]

use kernel::prelude::*;

use rdma::kshim::time;
use rdma::spec::opcodes::{WcOpcode, WcStatus};
use rdma::verbs::wr::{RecvWr, SendOp, SendWr};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{pair, End, Opts, Port, RxePair};

#[path = "../../lib/verify.rs"]
mod verify;
use verify::{expect, fill_pattern, quiet, same};

module! {
    type: RxeFaultTest,
    name: "rdma_rxe_fault_test",
    author: "rdma-rs developers",
    description: "Selftest: RC recovery from chosen lost, reordered and duplicated packets on rdma_rs_rxe",
    license: "GPL",
}

/// Ends with a 1 MiB buffer, 1 KiB path MTU and the first PSN `psn`.
const fn opts(psn: u32) -> Opts {
    Opts {
        buf_len: 1 << 20,
        psn,
        ..rc::RC
    }
}

/// Posts a receive of `len` bytes at `off` of `e`'s buffer.
fn recv(e: &End, wr_id: u64, off: usize, len: usize) -> Result {
    let rs = [e.sge(off, len)?];
    e.qp.post_recv(&[RecvWr {
        wr_id,
        cqe: None,
        sg: &rs,
    }])
    .map_err(|(_, e)| e)
}

/// Writes `len` bytes from `x` to `y` at `off` in one RDMA WRITE.
fn write(x: &End, y: &End, wr_id: u64, off: usize, len: usize) -> Result {
    let sg = [x.sge(off, len)?];
    let w = SendOp::Write {
        remote_addr: y.buf.addr(off),
        rkey: y.mr.rkey(),
    };
    x.qp.post_send(&[SendWr::new(wr_id, w, &sg)])
        .map_err(|(_, e)| e)
}

/// Reads `len` bytes at `off` of `y` into `x` at the same offset.
fn read(x: &End, y: &End, wr_id: u64, off: usize, len: usize) -> Result {
    let sg = [x.sge(off, len)?];
    let r = SendOp::Read {
        remote_addr: y.buf.addr(off),
        rkey: y.mr.rkey(),
    };
    x.qp.post_send(&[SendWr::new(wr_id, r, &sg)])
        .map_err(|(_, e)| e)
}

/// An 8 KiB WRITE (eight packets) whose fourth packet is lost: the
/// responder NAKs the gap, the requester goes back to it.
fn go_back_n(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &opts(0x10_0000))?;
    fill_pattern(&x.buf, 0, 8192, 1)?;
    write(&x, &y, 1, 0, 8192)?;
    expect(&x.cq, 1, WcStatus::Success, Some(WcOpcode::RdmaWrite))?;
    check(
        same(&x.buf, 0, &y.buf, 0, 8192)?,
        "all eight packets placed",
    )
}

/// A READ whose only response is lost, then a SEND: the ACK of the SEND
/// tells the requester the READ response is missing (an implied NAK), and
/// it asks for the READ again.
fn implied_nak(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &opts(0x20_0000))?;
    fill_pattern(&y.buf, 0, 512, 2)?;
    fill_pattern(&x.buf, 4096, 100, 3)?;
    recv(&y, 9, 4096, 100)?;
    let rsg = [x.sge(0, 512)?];
    let ssg = [x.sge(4096, 100)?];
    let r = SendOp::Read {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
    };
    x.qp.post_send(&[SendWr::new(1, r, &rsg), SendWr::new(2, SendOp::Send, &ssg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 1, WcStatus::Success, Some(WcOpcode::RdmaRead))?;
    expect(&x.cq, 2, WcStatus::Success, Some(WcOpcode::Send))?;
    expect(&y.cq, 9, WcStatus::Success, Some(WcOpcode::Recv))?;
    check(
        same(&x.buf, 0, &y.buf, 0, 512)?,
        "READ data after the retry",
    )?;
    check(same(&x.buf, 4096, &y.buf, 4096, 100)?, "SEND data once")
}

/// A 4 KiB READ (four responses) whose second response is lost: the
/// requester asks for the rest again from the missing packet.
fn read_gap(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &opts(0x30_0000))?;
    fill_pattern(&y.buf, 0, 4096, 4)?;
    read(&x, &y, 1, 0, 4096)?;
    expect(&x.cq, 1, WcStatus::Success, Some(WcOpcode::RdmaRead))?;
    check(
        same(&x.buf, 0, &y.buf, 0, 4096)?,
        "READ data with the gap filled",
    )
}

/// A 512 KiB READ whose third response is lost while the responder is
/// still sending: the responder restarts the queued READ from the packet
/// asked for (or serves it anew).
fn read_rewind(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &opts(0x40_0000))?;
    let len = 512 * 1024;
    fill_pattern(&y.buf, 0, len, 5)?;
    read(&x, &y, 1, 0, len)?;
    expect(&x.cq, 1, WcStatus::Success, Some(WcOpcode::RdmaRead))?;
    check(
        same(&x.buf, 0, &y.buf, 0, len)?,
        "READ data after the rewind",
    )
}

/// A FETCH_ADD whose ACK is lost: the requester times out and sends it
/// again; the responder answers the duplicate from its replay memory
/// without adding twice.
fn atomic_replay(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &opts(0x50_0000))?;
    y.buf.write(256, &1000u64.to_ne_bytes())?;
    let sg = [x.sge(0, 8)?];
    let op = SendOp::FetchAndAdd {
        remote_addr: y.buf.addr(256),
        rkey: y.mr.rkey(),
        add: 7,
    };
    x.qp.post_send(&[SendWr::new(1, op, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 1, WcStatus::Success, Some(WcOpcode::FetchAdd))?;
    let mut v = [0u8; 8];
    x.buf.read(0, &mut v)?;
    check(
        u64::from_ne_bytes(v) == 1000,
        "the original value, replayed",
    )?;
    y.buf.read(256, &mut v)?;
    check(u64::from_ne_bytes(v) == 1007, "added exactly once")
}

/// Three SENDs of which the second arrives after the third: the responder
/// NAKs the gap, takes the late one when it comes, answers the requester's
/// go-back-N copies as duplicates; every message lands once, in order.
fn reordered_request(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &opts(0x60_0000))?;
    fill_pattern(&x.buf, 0, 300, 6)?;
    for i in 0..3u64 {
        recv(&y, 10 + i, 1024 * i as usize, 100)?;
    }
    let sgs = [x.sge(0, 100)?, x.sge(100, 100)?, x.sge(200, 100)?];
    for (i, sg) in sgs.iter().enumerate() {
        x.qp.post_send(&[SendWr::new(
            i as u64,
            SendOp::Send,
            core::slice::from_ref(sg),
        )])
        .map_err(|(_, e)| e)?;
    }
    for i in 0..3u64 {
        expect(&x.cq, i, WcStatus::Success, Some(WcOpcode::Send))?;
    }
    for i in 0..3u64 {
        let wc = expect(&y.cq, 10 + i, WcStatus::Success, Some(WcOpcode::Recv))?;
        check(wc.byte_len == 100, "message length")?;
        check(
            same(&x.buf, 100 * i as usize, &y.buf, 1024 * i as usize, 100)?,
            "message in its own receive, in order",
        )?;
    }
    quiet(&y.cq, 100)
}

/// A WRITE of four packets whose third arrives twice: the copy is a
/// duplicate, answered without placing anything twice or completing
/// anything extra.
fn duplicate_request(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &opts(0x70_0000))?;
    fill_pattern(&x.buf, 0, 4096, 7)?;
    write(&x, &y, 1, 0, 4096)?;
    expect(&x.cq, 1, WcStatus::Success, Some(WcOpcode::RdmaWrite))?;
    quiet(&x.cq, 100)?;
    check(same(&x.buf, 0, &y.buf, 0, 4096)?, "WRITE data")
}

/// `rnr_retry` 7: RNR NAKs for as long as no receive is posted (here
/// half a second), then the SEND completes.
fn rnr_forever(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &opts(0x80_0000))?;
    fill_pattern(&x.buf, 0, 2000, 8)?;
    let sg = [x.sge(0, 2000)?];
    x.qp.post_send(&[SendWr::new(1, SendOp::Send, &sg)])
        .map_err(|(_, e)| e)?;
    quiet(&x.cq, 500)?;
    recv(&y, 2, 0, 4096)?;
    expect(&x.cq, 1, WcStatus::Success, Some(WcOpcode::Send))?;
    expect(&y.cq, 2, WcStatus::Success, Some(WcOpcode::Recv))?;
    check(same(&x.buf, 0, &y.buf, 0, 2000)?, "SEND data after RNR")
}

/// RDMA WRITE with immediate, one packet and several, with the receive
/// posted late: RNR NAKs, then the retried request completes (the
/// responder starts the one-packet message anew, and keeps the place of
/// the longer one).
fn rnr_write_with_imm(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &opts(0xb0_0000))?;
    for (i, len) in [823usize, 5000].into_iter().enumerate() {
        let wr_id = i as u64;
        fill_pattern(&x.buf, 0, len, 9 + i as u32)?;
        let sg = [x.sge(0, len)?];
        let w = SendOp::WriteWithImm {
            remote_addr: y.buf.addr(0),
            rkey: y.mr.rkey(),
            imm: 0x1234 + i as u32,
        };
        x.qp.post_send(&[SendWr::new(wr_id, w, &sg)])
            .map_err(|(_, e)| e)?;
        quiet(&x.cq, 100)?;
        recv(&y, 10 + wr_id, 512 * 1024, 16)?;
        expect(&x.cq, wr_id, WcStatus::Success, Some(WcOpcode::RdmaWrite))?;
        let wc = expect(
            &y.cq,
            10 + wr_id,
            WcStatus::Success,
            Some(WcOpcode::RecvRdmaWithImm),
        )?;
        check(
            wc.imm_data == 0x1234 + i as u32 && wc.byte_len as usize == len,
            "immediate and length",
        )?;
        check(same(&x.buf, 0, &y.buf, 0, len)?, "written once")?;
    }
    Ok(())
}

/// `rnr_retry` 0: the first RNR NAK fails the SEND.
fn rnr_none(a: Port<'_>, b: Port<'_>) -> Result {
    let o = Opts {
        rnr_retry: 0,
        ..opts(0x90_0000)
    };
    let (x, _y) = pair(a, b, &o)?;
    let sg = [x.sge(0, 16)?];
    x.qp.post_send(&[SendWr::new(1, SendOp::Send, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 1, WcStatus::RnrRetryExcErr, None)?;
    Ok(())
}

/// `retry_cnt` 1 against a responder that never answers (its QP is
/// destroyed): one retry, then RETRY_EXC_ERR after about two timeouts.
fn retry_exhausted(a: Port<'_>, b: Port<'_>) -> Result {
    let o = Opts {
        retry_cnt: 1,
        // About 67 ms.
        timeout: 14,
        ..opts(0xa0_0000)
    };
    let (x, y) = pair(a, b, &o)?;
    drop(y);
    time::msleep(10);
    let sg = [x.sge(0, 16)?];
    x.qp.post_send(&[SendWr::new(1, SendOp::Send, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 1, WcStatus::RetryExcErr, None)?;
    Ok(())
}

const CASES: &[FnCase<RxePair>] = &[
    case!("go_back_n", |p| go_back_n(p.a, p.b)),
    case!("implied_nak", |p| implied_nak(p.a, p.b)),
    case!("read_gap", |p| read_gap(p.a, p.b)),
    case!("read_rewind", |p| read_rewind(p.a, p.b)),
    case!("atomic_replay", |p| atomic_replay(p.a, p.b)),
    case!("reordered_request", |p| reordered_request(p.a, p.b)),
    case!("duplicate_request", |p| duplicate_request(p.a, p.b)),
    case!("rnr_retry_7_waits", |p| rnr_forever(p.a, p.b)),
    case!("rnr_retry_0_fails", |p| rnr_none(p.a, p.b)),
    case!("rnr_write_with_imm", |p| rnr_write_with_imm(p.a, p.b)),
    case!("retry_exhausted", |p| retry_exhausted(p.a, p.b)),
];

struct RxeFaultTest;

impl kernel::Module for RxeFaultTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut ports = RxePair::ipv4(3);
        ktap::run(CASES, &mut ports)?;
        Ok(RxeFaultTest)
    }
}
