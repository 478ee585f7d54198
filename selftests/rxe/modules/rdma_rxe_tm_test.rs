// SPDX-License-Identifier: GPL-2.0

//! Selftest: tag matching on rdma_rs_rxe (issue 27,
//! Documentation/tag_matching.rst), through the kernel verbs API.
//!
//! `tm.sh` makes `rxa` (10.78.8.1) and `rxb` (10.78.8.2) in two namespaces
//! joined by a veth pair and loads this module. Each case runs on loopback
//! (sender and receiver on `rxa`) and across the veth pair (`rxa` to
//! `rxb`); the sender is an ordinary RC QP, the receiver an RC QP of a TM
//! SRQ (`tm.rs`):
//!
//! - the four cases of rdma-core's `tests/test_tag_matching.py`: tagged
//!   traffic (tags listed, then sent in reverse order), unexpected tags
//!   and their sync, NO_TAG, rendezvous;
//! - a multi-packet eager message (two completions), masks, the
//!   first-posted entry among several matches, a delete that lost to a
//!   message (TM_ERR), a full list and a chain beyond `max_ops`
//!   (ENOMEM), the phase-sync scenario (a buffer listed between an
//!   unexpected m1 and m2 never takes m2 before the sync);
//! - a rendezvous into a buffer too short (RNDV_INCOMPLETE: the headers
//!   in the buffer, nothing past it), one whose key is bad (the READ
//!   fails: the buffer completes with the error, both QPs end as RC
//!   says), a TM SRQ torn down with tags listed and a rendezvous in
//!   flight;
//! - SENDs that carry no valid TMH (empty, an unknown operation, an EAGER
//!   or RNDV shorter than its headers, an RNDV over two packets): the
//!   sender's SEND and the receiver's ordinary receive complete with
//!   REM_INV_REQ_ERR, the receiver's QP is in error, no byte of any
//!   buffer moved (the script checks `tm_bad_header`).

#![forbid(unsafe_code)]

use kernel::error::code::{EINVAL, ENOMEM};
use kernel::prelude::*;

use rdma::spec::opcodes::{WcFlags, WcOpcode, WcStatus};
use rdma::spec::qp_state::QpState;
use rdma::spec::tm::header::{TmhOp, RNDV_HDRS_LEN, TMH_LEN};
use rdma::verbs::srq::tm::{OpsKind, OpsWr, TmCap};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{Opts, Port, RxePair};

#[path = "../../lib/verify.rs"]
mod verify;
use verify::{fill_pattern, quiet, same};

mod tm;
use tm::{ctx_of, rvh, tm_pair, tmh, TmPair, FIN_AT, PLAIN, RNDV_DATA};

module! {
    type: RxeTmTest,
    name: "rdma_rxe_tm_test",
    author: "rdma-rs developers",
    description: "Selftest: tag matching on rdma_rs_rxe through a TM SRQ",
    license: "GPL",
}

/// RC ends with a 1 KiB path MTU.
const OPTS: Opts = rc::RC;

/// A list of 64 tags, 8 operations a chain.
const CAP: TmCap = TmCap {
    max_num_tags: 64,
    max_ops: 8,
};

fn pair(tx: Port<'_>, rx: Port<'_>) -> Result<TmPair> {
    tm_pair(tx, rx, &OPTS, CAP, 64)
}

const MATCH_DV: WcFlags = WcFlags(WcFlags::TM_MATCH.0 | WcFlags::TM_DATA_VALID.0);

/// Bytes `len` at `off` of the receiver's buffer are all `b`.
fn all(p: &TmPair, off: usize, len: usize, b: u8) -> Result<bool> {
    let mut chunk = [0u8; 256];
    let mut done = 0;
    while done < len {
        let n = chunk.len().min(len - done);
        p.rx.buf.read(off + done, &mut chunk[..n])?;
        if chunk[..n].iter().any(|&x| x != b) {
            return Ok(false);
        }
        done += n;
    }
    Ok(true)
}

/// test_tm_traffic: 16 exact tags listed, messages sent with them in
/// reverse order; each lands, without its TMH, in its own buffer.
fn tagged(tx: Port<'_>, rx: Port<'_>) -> Result {
    let p = pair(tx, rx)?;
    const N: u64 = 16;
    const LEN: usize = 64;
    for tag in 1..=N {
        p.add_exact(tag, tag as usize * 256, LEN)?;
    }
    for tag in (1..=N).rev() {
        let at = tag as usize * 256;
        fill_pattern(&p.tx.buf, at + TMH_LEN, LEN, tag as u32)?;
        p.tx.buf.write(at, &tmh(TmhOp::Eager, ctx_of(tag), tag))?;
        p.send_raw(tag, at, TMH_LEN + LEN)?;
        p.sent(tag, WcStatus::Success)?;
        let wc = p.rx_wc()?;
        p.expect_tm(&wc, tag, MATCH_DV, Some(tag), LEN as u32)?;
        check(
            same(&p.rx.buf, at, &p.tx.buf, at + TMH_LEN, LEN)?,
            "the payload in its tagged buffer",
        )?;
    }
    check(p.rx.qp.query()?.qp_state == QpState::Rts, "receiver in RTS")
}

/// test_tm_unexpected_tag, then the phase-sync scenario: m1 unexpected; a
/// buffer listed for its tag before the sync (its TM_ADD asks for one);
/// m2 with the same tag is unexpected too; after the sync m3 takes the
/// buffer.
fn unexpected_then_sync(tx: Port<'_>, rx: Port<'_>) -> Result {
    let mut p = pair(tx, rx)?;
    for i in 0..4u64 {
        p.recv(100 + i, i as usize * 512, 512)?;
    }
    // No tag listed: unexpected, whole, TM_RECV without flags.
    fill_pattern(&p.tx.buf, TMH_LEN, 64, 0x77)?;
    p.tx.buf.write(0, &tmh(TmhOp::Eager, ctx_of(0x77), 0x77))?;
    p.send_raw(1, 0, TMH_LEN + 64)?;
    p.sent(1, WcStatus::Success)?;
    let wc = p.rx_wc()?;
    p.expect_tm(&wc, 100, WcFlags::NONE, Some(0x77), (TMH_LEN + 64) as u32)?;
    check(
        same(&p.rx.buf, PLAIN, &p.tx.buf, 0, TMH_LEN + 64)?,
        "headers and data in the ordinary receive",
    )?;
    p.unexpected += 1;
    p.sync()?;
    // m1.
    p.tx.buf.write(0, &tmh(TmhOp::Eager, ctx_of(5), 5))?;
    p.send_raw(2, 0, TMH_LEN + 8)?;
    p.sent(2, WcStatus::Success)?;
    let wc = p.rx_wc()?;
    p.expect_tm(&wc, 101, WcFlags::NONE, Some(5), (TMH_LEN + 8) as u32)?;
    // Listed before software handled m1: its completion asks for a sync.
    let mut op = [OpsWr {
        wr_id: 55,
        kind: OpsKind::Add {
            buf: rdma::verbs::wr::RecvWr {
                wr_id: 5,
                cqe: None,
                sg: &[p.rx.buf.sge(0, 64, p.rx.mr.lkey())?],
            },
            tag: 5,
            mask: u64::MAX,
        },
        signaled: true,
        unexpected_cnt: None,
        handle: 0,
    }];
    p.rx.srq.core().post_ops(&mut op).map_err(|(_, e)| e)?;
    let wc = p.rx_wc()?;
    p.expect(&wc, 55, WcOpcode::TmAdd, WcStatus::Success)?;
    check(
        wc.wc_flags.contains(WcFlags::TM_SYNC_REQ),
        "TM_ADD before the sync: SYNC_REQ",
    )?;
    p.rx.buf.fill(0, 64, 0xee)?;
    // m2: not the new buffer's.
    p.send_raw(3, 0, TMH_LEN + 8)?;
    p.sent(3, WcStatus::Success)?;
    let wc = p.rx_wc()?;
    p.expect_tm(&wc, 102, WcFlags::NONE, Some(5), (TMH_LEN + 8) as u32)?;
    check(
        all(&p, 0, 64, 0xee)?,
        "m2 did not touch the buffer listed after m1",
    )?;
    p.unexpected += 2;
    p.sync()?;
    // m3 takes it.
    fill_pattern(&p.tx.buf, TMH_LEN, 8, 0x33)?;
    p.send_raw(4, 0, TMH_LEN + 8)?;
    p.sent(4, WcStatus::Success)?;
    let wc = p.rx_wc()?;
    p.expect_tm(&wc, 5, MATCH_DV, Some(5), 8)?;
    check(
        same(&p.rx.buf, 0, &p.tx.buf, TMH_LEN, 8)?,
        "m3 in the buffer",
    )
}

/// test_tm_no_tag: a NO_TAG message goes whole to an ordinary receive as
/// TM_NO_TAG, and is not counted as unexpected (a tag listed after it
/// matches at once).
fn no_tag(tx: Port<'_>, rx: Port<'_>) -> Result {
    let p = pair(tx, rx)?;
    p.recv(7, 0, 256)?;
    fill_pattern(&p.tx.buf, TMH_LEN, 100, 0x99)?;
    p.tx.buf.write(0, &tmh(TmhOp::NoTag, ctx_of(0x99), 0x99))?;
    p.send_raw(1, 0, TMH_LEN + 100)?;
    p.sent(1, WcStatus::Success)?;
    let wc = p.rx_wc()?;
    p.expect(&wc, 7, WcOpcode::TmNoTag, WcStatus::Success)?;
    check(
        wc.byte_len as usize == TMH_LEN + 100
            && wc.tm_tag == 0x99
            && wc.wc_flags.0 & MATCH_DV.0 == 0,
        "TM_NO_TAG: whole, the TMH's tag, no match",
    )?;
    check(
        same(&p.rx.buf, PLAIN, &p.tx.buf, 0, TMH_LEN + 100)?,
        "the whole message",
    )?;
    // A one-byte NO_TAG message is one too.
    p.recv(8, 512, 16)?;
    p.send_raw(2, 0, 1)?;
    p.sent(2, WcStatus::Success)?;
    let wc = p.rx_wc()?;
    p.expect(&wc, 8, WcOpcode::TmNoTag, WcStatus::Success)?;
    p.add_exact(0x55, 0, 64)?;
    p.write_msg(0, TmhOp::Eager, 0x55, &[1, 2, 3])?;
    p.send_raw(3, 0, TMH_LEN + 3)?;
    p.sent(3, WcStatus::Success)?;
    let wc = p.rx_wc()?;
    p.expect_tm(&wc, 0x55, MATCH_DV, Some(0x55), 3)
}

/// Sends a rendezvous request for `len` bytes of the sender's data at
/// [`RNDV_DATA`] under `rkey`, with `tag` and 16 bytes of user data.
fn send_rndv(p: &TmPair, wr_id: u64, tag: u64, rkey: u32, len: u32) -> Result {
    p.tx.buf.write(0, &tmh(TmhOp::Rndv, ctx_of(tag), tag))?;
    p.tx.buf
        .write(TMH_LEN, &rvh(p.tx.buf.addr(RNDV_DATA), rkey, len))?;
    p.tx.buf.write(RNDV_HDRS_LEN, &[0xab; 16])?;
    p.send_raw(wr_id, 0, RNDV_HDRS_LEN + 16)
}

/// Posts the sender's receive for a FIN.
fn fin_recv(p: &TmPair, wr_id: u64) -> Result {
    let sg = [p.tx.sge(FIN_AT, 64)?];
    p.tx.qp
        .post_recv(&[rdma::verbs::wr::RecvWr {
            wr_id,
            cqe: None,
            sg: &sg,
        }])
        .map_err(|(_, e)| e)
}

/// test_tm_rndv: 64 KiB read by the receiver into a buffer of two SGEs;
/// TM_MATCH, then TM_DATA_VALID; the sender gets a FIN with the request's
/// headers.
fn rendezvous(tx: Port<'_>, rx: Port<'_>) -> Result {
    let p = pair(tx, rx)?;
    const LEN: usize = 64 * 1024;
    fill_pattern(&p.tx.buf, RNDV_DATA, LEN, 0x1234)?;
    p.add(0x1234, 0x1234, u64::MAX, &[(0, LEN / 2), (LEN, LEN / 2)])?;
    fin_recv(&p, 9)?;
    send_rndv(&p, 1, 0x1234, p.tx.mr.rkey(), LEN as u32)?;
    let wc = p.rx_wc()?;
    p.expect_tm(&wc, 0x1234, WcFlags::TM_MATCH, Some(0x1234), LEN as u32)?;
    let wc = p.rx_wc()?;
    p.expect_tm(&wc, 0x1234, WcFlags::TM_DATA_VALID, None, LEN as u32)?;
    check(
        same(&p.rx.buf, 0, &p.tx.buf, RNDV_DATA, LEN / 2)?
            && same(&p.rx.buf, LEN, &p.tx.buf, RNDV_DATA + LEN / 2, LEN / 2)?,
        "the data read into both SGEs",
    )?;
    // The SEND, then the FIN.
    p.sent(1, WcStatus::Success)?;
    let wc = p.tx_wc()?;
    p.expect(&wc, 9, WcOpcode::Recv, WcStatus::Success)?;
    check(wc.byte_len as usize == RNDV_HDRS_LEN, "a FIN of 32 bytes")?;
    let mut fin = [0u8; RNDV_HDRS_LEN];
    p.tx.buf.read(FIN_AT, &mut fin)?;
    let mut want = [0u8; RNDV_HDRS_LEN];
    want[..TMH_LEN].copy_from_slice(&tmh(TmhOp::Fin, ctx_of(0x1234), 0x1234));
    want[TMH_LEN..].copy_from_slice(&rvh(p.tx.buf.addr(RNDV_DATA), p.tx.mr.rkey(), LEN as u32));
    check(fin == want, "the FIN: the request's headers, operation FIN")?;
    quiet(p.rx.cq.core(), 50)
}

/// An eager message of three packets into two SGEs: TM_MATCH with the
/// first packet, TM_DATA_VALID with the last.
fn multi_packet_eager(tx: Port<'_>, rx: Port<'_>) -> Result {
    let p = pair(tx, rx)?;
    const LEN: usize = 3000;
    p.add(0xe, 0xe, u64::MAX, &[(0, 1000), (4096, 2000)])?;
    fill_pattern(&p.tx.buf, TMH_LEN, LEN, 0xe)?;
    p.tx.buf.write(0, &tmh(TmhOp::Eager, ctx_of(0xe), 0xe))?;
    p.send_raw(1, 0, TMH_LEN + LEN)?;
    let wc = p.rx_wc()?;
    p.expect_tm(&wc, 0xe, WcFlags::TM_MATCH, Some(0xe), 0)?;
    let wc = p.rx_wc()?;
    p.expect_tm(&wc, 0xe, WcFlags::TM_DATA_VALID, None, LEN as u32)?;
    p.sent(1, WcStatus::Success)?;
    check(
        same(&p.rx.buf, 0, &p.tx.buf, TMH_LEN, 1000)?
            && same(&p.rx.buf, 4096, &p.tx.buf, TMH_LEN + 1000, 2000)?,
        "the data across both SGEs, without the TMH",
    )
}

/// Sends an eager message of 8 bytes with `tag` and returns the
/// receiver's completion.
fn eager8(p: &TmPair, wr_id: u64, tag: u64) -> Result<rdma::verbs::wc::Wc> {
    p.write_msg(0, TmhOp::Eager, tag, &[tag as u8; 8])?;
    p.send_raw(wr_id, 0, TMH_LEN + 8)?;
    p.sent(wr_id, WcStatus::Success)?;
    p.rx_wc()
}

/// Masks and MPI's order: a masked entry posted first wins over exact
/// ones posted after it; then the exact ones in posting order; a tag
/// whose bits the mask keeps but the entry's tag does not have never
/// matches.
fn masks_and_order(tx: Port<'_>, rx: Port<'_>) -> Result {
    let mut p = pair(tx, rx)?;
    p.recv(200, 0, 64)?;
    p.recv(201, 64, 64)?;
    p.add(0xa, 0x100, 0xf00, &[(0, 64)])?;
    p.add(0xb, 0x1ab, u64::MAX, &[(64, 64)])?;
    p.add(0xc, 0x1ab, u64::MAX, &[(128, 64)])?;
    p.add(0xd, 0x3000, 0xff00, &[(192, 64)])?;
    p.expect_tm(&eager8(&p, 1, 0x1ab)?, 0xa, MATCH_DV, Some(0x1ab), 8)?;
    p.expect_tm(&eager8(&p, 2, 0x1ab)?, 0xb, MATCH_DV, Some(0x1ab), 8)?;
    // 0x2ab: the masked entry is gone; nothing else matches.
    p.expect_tm(&eager8(&p, 3, 0x2ab)?, 200, WcFlags::NONE, Some(0x2ab), 24)?;
    p.unexpected += 1;
    p.sync()?;
    p.expect_tm(&eager8(&p, 4, 0x1ab)?, 0xc, MATCH_DV, Some(0x1ab), 8)?;
    // 0x3412 & 0xff00 == 0x3400, not 0x3000.
    p.expect_tm(
        &eager8(&p, 5, 0x3412)?,
        201,
        WcFlags::NONE,
        Some(0x3412),
        24,
    )?;
    p.unexpected += 1;
    p.sync()?;
    p.expect_tm(&eager8(&p, 6, 0x3099)?, 0xd, MATCH_DV, Some(0x3099), 8)
}

/// A TAG_DEL that lost to a message completes TM_ERR; one of a listed
/// entry succeeds and its tag then goes unexpected.
fn delete_races_consumption(tx: Port<'_>, rx: Port<'_>) -> Result {
    let p = pair(tx, rx)?;
    let h = p.add_exact(0x42, 0, 64)?;
    p.expect_tm(&eager8(&p, 1, 0x42)?, 0x42, MATCH_DV, Some(0x42), 8)?;
    let del = |wr_id: u64, handle: u32| -> Result<rdma::verbs::wc::Wc> {
        let mut op = [OpsWr {
            wr_id,
            kind: OpsKind::Del,
            signaled: false,
            unexpected_cnt: None,
            handle,
        }];
        p.rx.srq.core().post_ops(&mut op).map_err(|(_, e)| e)?;
        p.rx_wc()
    };
    // Unsignaled, yet it completes: it failed.
    let wc = del(70, h)?;
    p.expect(&wc, 70, WcOpcode::TmDel, WcStatus::TmErr)?;
    let h = p.add_exact(0x43, 64, 64)?;
    let mut op = [OpsWr {
        wr_id: 71,
        kind: OpsKind::Del,
        signaled: true,
        unexpected_cnt: None,
        handle: h,
    }];
    p.rx.srq.core().post_ops(&mut op).map_err(|(_, e)| e)?;
    let wc = p.rx_wc()?;
    p.expect(&wc, 71, WcOpcode::TmDel, WcStatus::Success)?;
    p.recv(300, 0, 64)?;
    p.rx.buf.fill(64, 64, 0xee)?;
    p.expect_tm(&eager8(&p, 2, 0x43)?, 300, WcFlags::NONE, Some(0x43), 24)?;
    check(all(&p, 64, 64, 0xee)?, "the deleted buffer untouched")
}

/// A list of four: the fifth TAG_ADD is ENOMEM (the ones before it in the
/// chain carried out); a chain longer than max_ops (2) is ENOMEM at the
/// third; a consumed entry's slot is free again once its message is done.
fn full_list_and_max_ops(tx: Port<'_>, rx: Port<'_>) -> Result {
    let p = tm_pair(
        tx,
        rx,
        &OPTS,
        TmCap {
            max_num_tags: 4,
            max_ops: 2,
        },
        8,
    )?;
    for tag in 1..=4 {
        p.add_exact(tag, tag as usize * 64, 64)?;
    }
    let sg = [p.rx.buf.sge(0, 64, p.rx.mr.lkey())?];
    let add = |wr_id| OpsWr {
        wr_id,
        kind: OpsKind::Add {
            buf: rdma::verbs::wr::RecvWr {
                wr_id,
                cqe: None,
                sg: &sg,
            },
            tag: wr_id,
            mask: u64::MAX,
        },
        signaled: true,
        unexpected_cnt: None,
        handle: 0,
    };
    let mut one = [add(5)];
    check(
        p.rx.srq.core().post_ops(&mut one).err() == Some((0, ENOMEM)),
        "a full list: ENOMEM",
    )?;
    // A message frees a slot once done with it.
    p.expect_tm(&eager8(&p, 1, 2)?, 2, MATCH_DV, Some(2), 8)?;
    let sync = |wr_id| OpsWr {
        wr_id,
        kind: OpsKind::Sync,
        signaled: true,
        unexpected_cnt: None,
        handle: 0,
    };
    let mut three = [add(6), sync(7), sync(8)];
    check(
        p.rx.srq.core().post_ops(&mut three).err() == Some((2, ENOMEM)),
        "three operations, max_ops 2: ENOMEM at the third",
    )?;
    let wc = p.rx_wc()?;
    p.expect(&wc, 6, WcOpcode::TmAdd, WcStatus::Success)?;
    let wc = p.rx_wc()?;
    p.expect(&wc, 7, WcOpcode::TmSync, WcStatus::Success)?;
    p.expect_tm(&eager8(&p, 2, 6)?, 6, MATCH_DV, Some(6), 8)?;
    quiet(p.rx.cq.core(), 20)
}

/// A rendezvous of 4 KiB into a 24-byte buffer: TM_RNDV_INCOMPLETE, the
/// first 24 bytes of the request in the buffer, nothing past it, no READ
/// and no FIN; the QPs carry on.
fn rndv_incomplete(tx: Port<'_>, rx: Port<'_>) -> Result {
    let p = pair(tx, rx)?;
    p.rx.buf.fill(0, 64, 0xee)?;
    p.add_exact(0x21, 0, 24)?;
    fin_recv(&p, 9)?;
    send_rndv(&p, 1, 0x21, p.tx.mr.rkey(), 4096)?;
    p.sent(1, WcStatus::Success)?;
    let wc = p.rx_wc()?;
    p.expect(&wc, 0x21, WcOpcode::TmRecv, WcStatus::TmRndvIncomplete)?;
    check(
        wc.wc_flags.contains(WcFlags::TM_MATCH) && wc.byte_len == 24 && wc.tm_tag == 0x21,
        "matched, 24 bytes of headers",
    )?;
    check(
        same(&p.rx.buf, 0, &p.tx.buf, 0, 24)?,
        "the headers in the buffer",
    )?;
    check(all(&p, 24, 40, 0xee)?, "nothing past the buffer")?;
    quiet(p.tx.cq.core(), 50)?;
    p.add_exact(0x22, 0, 24)?;
    p.expect_tm(&eager8(&p, 2, 0x22)?, 0x22, MATCH_DV, Some(0x22), 8)
}

/// A rendezvous whose key is bad: the receiver's READ is NAKed (remote
/// access error), its tagged buffer completes with REM_ACCESS_ERR after
/// its TM_MATCH, and the receiver's QP is in error; the sender's
/// responder refused the READ, so its QP is in error too (RC), its FIN
/// receive flushed.
fn rndv_bad_key(tx: Port<'_>, rx: Port<'_>) -> Result {
    let p = pair(tx, rx)?;
    p.add_exact(0x31, 0, 4096)?;
    fin_recv(&p, 9)?;
    send_rndv(&p, 1, 0x31, p.tx.mr.rkey() ^ 0x100, 4096)?;
    let wc = p.rx_wc()?;
    p.expect_tm(&wc, 0x31, WcFlags::TM_MATCH, Some(0x31), 4096)?;
    let wc = p.rx_wc()?;
    p.expect(&wc, 0x31, WcOpcode::TmRecv, WcStatus::RemAccessErr)?;
    check(
        p.rx.qp.query()?.qp_state == QpState::Err,
        "the receiver's QP in error",
    )?;
    // The SEND was acknowledged before the READ came, unless the READ
    // overtook the ACK's processing: then it was flushed.
    let wc = p.tx_wc()?;
    let st = if wc.status == WcStatus::WrFlushErr {
        WcStatus::WrFlushErr
    } else {
        WcStatus::Success
    };
    p.expect(&wc, 1, WcOpcode::Send, st)?;
    let wc = p.tx_wc()?;
    p.expect(&wc, 9, WcOpcode::Recv, WcStatus::WrFlushErr)?;
    check(
        p.tx.qp.query()?.qp_state == QpState::Err,
        "the sender's QP in error",
    )
}

/// A TM SRQ torn down with tags listed, an eager message half received
/// and a 1 MiB rendezvous in flight: the receiver's QP, SRQ and CQ go
/// in that order with nothing left behind (kmemleak and the splat check
/// of the script).
fn teardown_in_flight(tx: Port<'_>, rx: Port<'_>) -> Result {
    let p = pair(tx, rx)?;
    for tag in 1..=20 {
        p.add_exact(tag, tag as usize * 4096, 4096)?;
    }
    p.add_exact(0x99, 1 << 20, 1 << 20)?;
    fin_recv(&p, 9)?;
    send_rndv(&p, 1, 0x99, p.tx.mr.rkey(), 1 << 20)?;
    let wc = p.rx_wc()?;
    p.expect_tm(&wc, 0x99, WcFlags::TM_MATCH, Some(0x99), 1 << 20)?;
    drop(p);
    Ok(())
}

/// One SEND without a valid TMH: see the module's doc.
fn bad_header(tx: Port<'_>, rx: Port<'_>, what: &str, op: u8, len: usize) -> Result {
    let p = pair(tx, rx)?;
    p.rx.buf.fill(0, 4096, 0xee)?;
    p.rx.buf.fill(PLAIN, 4096, 0xee)?;
    p.add(1, 0, 0, &[(0, 4096)])?;
    p.recv(500, 0, 4096)?;
    let mut msg = [0u8; 1500];
    msg[0] = op;
    msg[1..].fill(0x11);
    p.tx.buf.write(0, &msg)?;
    p.send_raw(1, 0, len)?;
    p.sent(1, WcStatus::RemInvReqErr)?;
    let wc = p.rx_wc()?;
    p.expect(&wc, 500, WcOpcode::Recv, WcStatus::RemInvReqErr)?;
    if p.rx.qp.query()?.qp_state != QpState::Err {
        pr_err!("{}: the receiver's QP is not in error\n", what);
        return Err(EINVAL);
    }
    if !all(&p, 0, 4096, 0xee)? || !all(&p, PLAIN, 4096, 0xee)? {
        pr_err!("{}: bytes moved\n", what);
        return Err(EINVAL);
    }
    Ok(())
}

fn bad_headers(tx: Port<'_>, rx: Port<'_>) -> Result {
    bad_header(tx, rx, "empty", 0, 0)?;
    bad_header(tx, rx, "unknown operation", 7, 16)?;
    bad_header(tx, rx, "EAGER of 8 bytes", TmhOp::Eager as u8, 8)?;
    bad_header(tx, rx, "RNDV without its RVH", TmhOp::Rndv as u8, 20)?;
    bad_header(tx, rx, "RNDV of two packets", TmhOp::Rndv as u8, 1500)
}

macro_rules! both_ways {
    ($($f:ident),* $(,)?) => {
        &[
            $(
                FnCase { name: concat!(stringify!($f), "_loopback"), run: |p: &mut RxePair| $f(p.a, p.a) },
                FnCase { name: concat!(stringify!($f), "_veth"), run: |p: &mut RxePair| $f(p.a, p.b) },
            )*
        ]
    };
}

const CASES: &[FnCase<RxePair>] = both_ways![
    tagged,
    unexpected_then_sync,
    no_tag,
    rendezvous,
    multi_packet_eager,
    masks_and_order,
    delete_races_consumption,
    full_list_and_max_ops,
    rndv_incomplete,
    rndv_bad_key,
    teardown_in_flight,
    bad_headers,
];

struct RxeTmTest;

impl kernel::Module for RxeTmTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut ports = RxePair::ipv4(8);
        ktap::run(CASES, &mut ports)?;
        Ok(RxeTmTest)
    }
}
