// SPDX-License-Identifier: GPL-2.0

//! Selftest: RC and UC between `rdma_rs_rxe` devices, on the wire and in
//! loopback.
//!
//! `rc.sh` makes `rxa` (10.78.1.1, fd00:79::1) and `rxb` (10.78.1.2,
//! fd00:79::2), each in its own network namespace, joined by a veth pair.
//! Every case runs through the verbs of `rdma_core`: each operation with
//! sizes from 0 bytes to 1 MiB, unaligned and over several SGEs, checked
//! byte for byte with its completions on both sides; atomics; UC; many QPs
//! at once; access violations (bad rkey, out of bounds, missing
//! permission) with the right status and both QPs in error; RNR retries
//! and their exhaustion; local ACK timeouts with retransmission; flushes;
//! and QPs destroyed with traffic in flight. Send PSNs start just below
//! the 24-bit wrap so every transfer crosses it.

#![forbid(unsafe_code)]

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::{new_spinlock, Arc, SpinLock};

use rdma::device::event::{Element, Event, EventHandler, EventKind};
use rdma::device::{self, Device};
use rdma::kshim::mem::{Buffer, Sge};
use rdma::kshim::pages::{PageSlice, SharedPage};
use rdma::kshim::sync::SpinLockIrq;
use rdma::kshim::time;
use rdma::spec::opcodes::{Access, SendFlags, WcFlags, WcOpcode, WcStatus};
use rdma::spec::qp_state::{AttrMask, QpState, QpType};
use rdma::verbs::cq::CqCore;
use rdma::verbs::cq::{Cq, PollCtx};
use rdma::verbs::mr::{BufSlice, Mr, PAGES_IOVA};
use rdma::verbs::mw::{Mw, MwType};
use rdma::verbs::pd::PdFlags;
use rdma::verbs::qp::QpAttr;
use rdma::verbs::qp::{Qp, QpInitAttr};
use rdma::verbs::srq::{Srq, SrqAttr};
use rdma::verbs::wc::CqeDone;
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{FlushType, RecvWr, SendOp, SendWr};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
#[path = "../../lib/verify.rs"]
mod verify;
use rc::{pair, End, Opts, Port, RxePair};
use verify::{expect, fill_pattern, poll, quiet, same, Rng};

module! {
    type: RxeRcTest,
    name: "rdma_rxe_rc_test",
    author: "rdma-rs developers",
    description: "Selftest: RC and UC on rdma_rs_rxe devices",
    license: "GPL",
}

/// The largest message.
const MIB: usize = 1 << 20;
/// Each end's buffer: a largest message at an unaligned offset, and room.
const BUF: usize = 2 * MIB + 4096;
/// The first send PSN: 16 below the 24-bit wrap.
const PSN: u32 = 0xff_fff0;

/// Every end of this test: a buffer for the largest message at an
/// unaligned offset, and send PSNs that cross the 24-bit wrap.
const OPTS: Opts = Opts {
    buf_len: BUF,
    psn: PSN,
    ..rc::RC
};

/// Up to three SGEs covering `len` bytes from `off` of `e`'s buffer.
fn split(e: &End, off: usize, len: usize, rng: &mut Rng) -> Result<KVec<Sge>> {
    let mut v = KVec::new();
    if len == 0 {
        return Ok(v);
    }
    let a = rng.below(len as u32 + 1) as usize;
    let b = rng.below((len - a) as u32 + 1) as usize;
    let mut at = off;
    for part in [a, b, len - a - b] {
        if part > 0 {
            v.push(e.sge(at, part)?, GFP_KERNEL)?;
            at += part;
        }
    }
    Ok(v)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Send,
    SendImm,
    Write,
    WriteImm,
    Read,
}

/// One message of `op` and `len` bytes from `x` to `y`, checked byte for
/// byte with its completions.
fn transfer(x: &End, y: &End, op: Op, len: usize, seed: u32) -> Result {
    let mut rng = Rng(seed.wrapping_mul(2_654_435_761) | 1);
    let src_off = 1 + rng.below(7) as usize;
    let dst_off = 1 + rng.below(7) as usize;
    // Data starts where it is read from: READ reads y's memory into x's.
    let (from, from_off, to, to_off) = if op == Op::Read {
        (y, dst_off, x, src_off)
    } else {
        (x, src_off, y, dst_off)
    };
    fill_pattern(&from.buf, from_off, len, seed)?;
    to.buf.fill(to_off, len + 1, 0x5a)?;
    let imm = 0x1000_0000 | seed;
    let remote_addr = y.buf.addr(dst_off);
    let rkey = y.mr.rkey();
    let sg = split(x, src_off, len, &mut rng)?;
    let recv_sg = split(y, dst_off, len, &mut rng)?;
    let gets_recv = matches!(op, Op::Send | Op::SendImm | Op::WriteImm);
    if gets_recv {
        // A SEND lands in the receive SGEs; a WRITE with immediate only
        // needs a receive WQE.
        let sg: &[Sge] = if op == Op::WriteImm { &[] } else { &recv_sg };
        y.qp.post_recv(&[RecvWr {
            wr_id: 7,
            cqe: None,
            sg,
        }])
        .map_err(|(_, e)| e)?;
    }
    let sop = match op {
        Op::Send => SendOp::Send,
        Op::SendImm => SendOp::SendWithImm(imm),
        Op::Write => SendOp::Write { remote_addr, rkey },
        Op::WriteImm => SendOp::WriteWithImm {
            remote_addr,
            rkey,
            imm,
        },
        Op::Read => SendOp::Read { remote_addr, rkey },
    };
    x.qp.post_send(&[SendWr::new(11, sop, &sg)])
        .map_err(|(_, e)| e)?;
    let want = match op {
        Op::Send | Op::SendImm => WcOpcode::Send,
        Op::Write | Op::WriteImm => WcOpcode::RdmaWrite,
        Op::Read => WcOpcode::RdmaRead,
    };
    expect(&x.cq, 11, WcStatus::Success, Some(want))?;
    if gets_recv {
        let want = if op == Op::WriteImm {
            WcOpcode::RecvRdmaWithImm
        } else {
            WcOpcode::Recv
        };
        let wc = expect(&y.cq, 7, WcStatus::Success, Some(want))?;
        check(wc.byte_len as usize == len, "receive byte count")?;
        let has_imm = op != Op::Send;
        check(
            wc.wc_flags.contains(WcFlags::WITH_IMM) == has_imm && (!has_imm || wc.imm_data == imm),
            "immediate data",
        )?;
        check(wc.qp_num == y.qp.qpn(), "receive QP number")?;
    }
    if !same(&from.buf, from_off, &to.buf, to_off, len)? {
        pr_err!("{:?} of {} bytes: data differs\n", op, len);
        return Err(EINVAL);
    }
    // Nothing written beyond the message.
    let mut edge = [0u8; 1];
    to.buf.read(to_off + len, &mut edge)?;
    check(edge[0] == 0x5a || len == 0, "nothing written past the end")?;
    Ok(())
}

/// Completions handed to their work requests (`wr_cqe`) by core-polled
/// CQs: (wr_id, status, opcode, byte count) in arrival order. An IRQ-safe
/// lock: the handlers run in softirq and in workqueues.
#[pin_data]
struct Done {
    #[pin]
    seen: SpinLockIrq<KVec<(u64, WcStatus, WcOpcode, u32)>>,
}

impl CqeDone for Done {
    fn done(&self, _cq: &CqCore, wc: &Wc) {
        let _ = self
            .seen
            .lock()
            .push((wc.wr_id, wc.status, wc.opcode, wc.byte_len), GFP_ATOMIC);
    }
}

impl Done {
    fn new() -> Result<Arc<Done>> {
        Arc::pin_init(
            pin_init!(Done {
                seen <- rdma::new_spinlock_irq!(KVec::new(), "Done::seen"),
            }),
            GFP_KERNEL,
        )
    }

    /// Waits until `n` completions came.
    fn wait(&self, n: usize) -> Result {
        for _ in 0..500 {
            if self.seen.lock().len() >= n {
                return Ok(());
            }
            time::msleep(10);
        }
        pr_err!("{} of {} completions came\n", self.seen.lock().len(), n);
        Err(EINVAL)
    }
}

/// On rxe: an SRQ with its limit event, core-polled CQs (softirq and
/// workqueue) delivering to each request's handler, and drain.
fn srq_cqs_drain(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let ev = Arc::pin_init(
        pin_init!(QpEvents {
            seen <- new_spinlock!(KVec::new(), "QpEvents::seen"),
        }),
        GFP_KERNEL,
    )?;
    let _reg = y.dev.arc().register_event_handler(ev.clone())?;
    let xcq = Cq::alloc(x.dev.arc(), 64, PollCtx::Softirq)?;
    let ycq = Cq::alloc(y.dev.arc(), 64, PollCtx::Workqueue)?;
    let srq = Srq::create(
        y.pd.core(),
        &SrqAttr {
            max_wr: 8,
            max_sge: 1,
            srq_limit: 0,
        },
    )?;
    let xq = rc::create_qp(&x.pd, &xcq, &xcq, &OPTS)?;
    let yq = Qp::create(
        y.pd.core(),
        &QpInitAttr {
            qp_type: QpType::Rc,
            send_cq: ycq.core(),
            recv_cq: ycq.core(),
            srq: Some(srq.core()),
            cap: OPTS.cap,
            sq_sig_all: false,
            port_num: 1,
        },
    )?;
    let to_y = rc::Remote {
        qpn: yq.qpn(),
        psn: OPTS.psn,
        av: x.av(y.gid)?,
    };
    let to_x = rc::Remote {
        qpn: xq.qpn(),
        psn: OPTS.psn,
        av: y.av(x.gid)?,
    };
    rc::modify_to(&xq, &OPTS, &to_y, QpState::Rts)?;
    rc::modify_to(&yq, &OPTS, &to_x, QpState::Rts)?;
    let (sent, got) = (Done::new()?, Done::new()?);
    let (sent_cqe, got_cqe): (Arc<dyn CqeDone>, Arc<dyn CqeDone>) = (sent.clone(), got.clone());
    // Four receives on the SRQ, 1000 bytes apart; the limit armed at 2.
    for i in 0..4u64 {
        let rs = [y.sge(200_000 + 1000 * i as usize, 1000)?];
        srq.post_recv(&[RecvWr {
            wr_id: 100 + i,
            cqe: Some(got_cqe.clone()),
            sg: &rs,
        }])
        .map_err(|(_, e)| e)?;
    }
    srq.modify(None, Some(2))?;
    // Three SENDs of 500 + i bytes: the SRQ drops to one WQE.
    for i in 0..3u64 {
        let len = 500 + i as usize;
        fill_pattern(&x.buf, 100_000 + 1000 * i as usize, len, 80 + i as u32)?;
        let sg = [x.sge(100_000 + 1000 * i as usize, len)?];
        let mut w = SendWr::new(i, SendOp::Send, &sg);
        w.cqe = Some(sent_cqe.clone());
        xq.post_send(&[w]).map_err(|(_, e)| e)?;
    }
    sent.wait(3)?;
    got.wait(3)?;
    for (i, &(id, status, op, len)) in got.seen.lock().iter().enumerate() {
        check(
            id == 100 + i as u64 && status == WcStatus::Success && op == WcOpcode::Recv,
            "receives from the SRQ, in order",
        )?;
        check(len == 500 + i as u32, "receive length")?;
    }
    for i in 0..3usize {
        check(
            same(
                &x.buf,
                100_000 + 1000 * i,
                &y.buf,
                200_000 + 1000 * i,
                500 + i,
            )?,
            "SEND data in the SRQ's buffers",
        )?;
    }
    check(
        sent.seen
            .lock()
            .iter()
            .enumerate()
            .all(|(i, &(id, s, op, _))| {
                id == i as u64 && s == WcStatus::Success && op == WcOpcode::Send
            }),
        "sends completed in order",
    )?;
    wait_event(&ev, EventKind::SrqLimitReached, srq.num())?;
    // Drain both QPs: the sender's queue is empty; the receiver's with an
    // SRQ drains its send queue only, and its SRQ WQE stays posted.
    xq.drain()?;
    yq.drain()?;
    check(
        xq.state() == QpState::Err && yq.state() == QpState::Err,
        "drained QPs in ERR",
    )?;
    let left = got.seen.lock().len();
    check(left == 3, "the SRQ's last WQE not flushed")
}

/// Memory windows on rxe, bound by the responder's QP: a type 1 window
/// opens part of an MR for WRITE, a type 2 window for READ; a peer's access
/// through each lands in the window's range; a SEND with invalidate kills
/// the type 2 window, after which an access through it fails.
fn windows(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::MW_BIND;
    let mr = Mr::reg_buffer(y.pd.core(), &y.buf, 0, 65536, rights)?;
    let w1 = Mw::alloc(y.pd.core(), MwType::Type1)?;
    let w2 = Mw::alloc(y.pd.core(), MwType::Type2)?;
    let (k1, k2) = ((w1.rkey() & !0xff) | 0x21, (w2.rkey() & !0xff) | 0x22);
    let (base1, base2) = (y.buf.addr(8192), y.buf.addr(16384));
    for (id, mw, key, addr, access) in [
        (1, &w1, k1, base1, Access::REMOTE_WRITE),
        (2, &w2, k2, base2, Access::REMOTE_READ),
    ] {
        let bind = SendOp::BindMw {
            mw: mw.core(),
            mr: mr.core(),
            key,
            addr,
            length: 1024,
            access,
        };
        y.qp.post_send(&[SendWr::new(id, bind, &[])])
            .map_err(|(_, e)| e)?;
        expect(&y.cq, id, WcStatus::Success, Some(WcOpcode::BindMw))?;
        check(mw.is_bound() && mw.rkey() == key, "bound under the new key")?;
    }
    // WRITE through the type 1 window.
    fill_pattern(&x.buf, 0, 300, 61)?;
    let sg = [x.sge(0, 300)?];
    let w = SendOp::Write {
        remote_addr: base1 + 100,
        rkey: k1,
    };
    x.qp.post_send(&[SendWr::new(3, w, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 3, WcStatus::Success, Some(WcOpcode::RdmaWrite))?;
    check(
        same(&x.buf, 0, &y.buf, 8192 + 100, 300)?,
        "written through the type 1 window",
    )?;
    // READ through the type 2 window.
    fill_pattern(&y.buf, 16384, 1024, 62)?;
    let rsg = [x.sge(4096, 1024)?];
    let r = SendOp::Read {
        remote_addr: base2,
        rkey: k2,
    };
    x.qp.post_send(&[SendWr::new(4, r, &rsg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 4, WcStatus::Success, Some(WcOpcode::RdmaRead))?;
    check(
        same(&y.buf, 16384, &x.buf, 4096, 1024)?,
        "read through the type 2 window",
    )?;
    // SEND with invalidate of the type 2 window.
    let rs = [y.sge(32768, 64)?];
    y.qp.post_recv(&[RecvWr {
        wr_id: 5,
        cqe: None,
        sg: &rs,
    }])
    .map_err(|(_, e)| e)?;
    x.qp.post_send(&[SendWr::new(5, SendOp::SendWithInv(k2), &[])])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 5, WcStatus::Success, Some(WcOpcode::Send))?;
    let rc = expect(&y.cq, 5, WcStatus::Success, Some(WcOpcode::Recv))?;
    check(
        rc.wc_flags.contains(WcFlags::WITH_INVALIDATE) && rc.invalidate_rkey == k2,
        "the receiver learns the invalidated key",
    )?;
    check(!w2.is_bound(), "the type 2 window is unbound")?;
    // Through the dead window: a remote access error.
    remote_failure(&x, &y, r, 64)
}

/// A SEND with invalidate of an MR that a window is bound to is refused,
/// as in the C rxe: the receive completes with `RemInvReqErr` (the sender
/// gets the NAK's `RemInvReqErr`) and the MR stays valid.
fn send_inv_of_mr_with_window(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let page = Buffer::new(4096)?;
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::MW_BIND;
    let (fr, fkey) = fast_reg_page(&y, &page, 1, 0x41, rights)?;
    let w = Mw::alloc(y.pd.core(), MwType::Type1)?;
    let bind = SendOp::BindMw {
        mw: w.core(),
        mr: fr.core(),
        key: (w.rkey() & !0xff) | 0x42,
        addr: page.addr(0),
        length: 512,
        access: Access::REMOTE_WRITE,
    };
    y.qp.post_send(&[SendWr::new(2, bind, &[])])
        .map_err(|(_, e)| e)?;
    expect(&y.cq, 2, WcStatus::Success, Some(WcOpcode::BindMw))?;
    check(fr.windows() == 1, "one window on the MR")?;
    let rs = [y.sge(0, 64)?];
    y.qp.post_recv(&[RecvWr {
        wr_id: 3,
        cqe: None,
        sg: &rs,
    }])
    .map_err(|(_, e)| e)?;
    x.qp.post_send(&[SendWr::new(3, SendOp::SendWithInv(fkey), &[])])
        .map_err(|(_, e)| e)?;
    expect(&y.cq, 3, WcStatus::RemInvReqErr, None)?;
    expect(&x.cq, 3, WcStatus::RemInvReqErr, None)?;
    check(fr.is_valid(), "the MR is still valid")?;
    drop(w);
    check(fr.windows() == 0, "the window went")
}

/// Registers `page` in a new fast-registration MR of `e`'s PD, through a
/// REG_MR work request `id` of `e`'s QP, under key byte `byte`: the MR
/// and its key.
fn fast_reg_page(
    e: &End,
    page: &Arc<Buffer>,
    id: u64,
    byte: u32,
    access: Access,
) -> Result<(Mr, u32)> {
    let fr = Mr::alloc_fast_reg(e.pd.core(), 1)?;
    let slices = [BufSlice {
        buf: page,
        offset: 0,
        len: 4096,
    }];
    check(fr.map_mr_sg(&slices, 4096)? == 1, "one page mapped")?;
    let key = (fr.lkey() & !0xff) | byte;
    let reg = SendOp::RegMr {
        mr: fr.core(),
        key,
        access,
    };
    e.qp.post_send(&[SendWr::new(id, reg, &[])])
        .map_err(|(_, e)| e)?;
    expect(&e.cq, id, WcStatus::Success, Some(WcOpcode::RegMr))?;
    Ok((fr, key))
}

/// LOCAL_INV of a fast-registration MR on rxe (a peer's WRITE to it then
/// fails), and READ with invalidate, whose local MR dies with the READ.
fn local_and_read_invalidate(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    // The reader's sink: a fast-registration MR over a buffer of its own.
    let page = Buffer::new(4096)?;
    let (fr, key) = fast_reg_page(&x, &page, 1, 0x31, Access::LOCAL_WRITE)?;
    fill_pattern(&y.buf, 0, 64, 71)?;
    let sink = [Sge {
        addr: fr.iova(),
        length: 64,
        lkey: key,
    }];
    let r = SendOp::ReadWithInv {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
        invalidate: key,
    };
    x.qp.post_send(&[SendWr::new(2, r, &sink)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 2, WcStatus::Success, Some(WcOpcode::RdmaRead))?;
    check(same(&y.buf, 0, &page, 0, 64)?, "read landed in the sink")?;
    check(!fr.is_valid(), "the sink's MR died with the READ")?;
    // The responder's own fast-registration MR, then LOCAL_INV of it.
    let ypage = Buffer::new(4096)?;
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
    let (yfr, ykey) = fast_reg_page(&y, &ypage, 3, 0x32, rights)?;
    let w = SendOp::Write {
        remote_addr: yfr.iova(),
        rkey: ykey,
    };
    fill_pattern(&x.buf, 0, 64, 72)?;
    let sg = [x.sge(0, 64)?];
    x.qp.post_send(&[SendWr::new(4, w, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 4, WcStatus::Success, Some(WcOpcode::RdmaWrite))?;
    check(same(&x.buf, 0, &ypage, 0, 64)?, "written while registered")?;
    y.qp.post_send(&[SendWr::new(5, SendOp::LocalInv(ykey), &[])])
        .map_err(|(_, e)| e)?;
    expect(&y.cq, 5, WcStatus::Success, Some(WcOpcode::LocalInv))?;
    check(!yfr.is_valid(), "invalid after LOCAL_INV")?;
    remote_failure(&x, &y, w, 64)
}

/// Compares `len` bytes of `buf` at `off` with the pieces' bytes, in
/// order.
fn same_as_pieces(buf: &Buffer, off: usize, pieces: &[PageSlice]) -> Result<bool> {
    let mut at = off;
    for p in pieces.iter() {
        let mut a = [0u8; 512];
        let mut b = [0u8; 512];
        let mut done = 0;
        while done < p.len {
            let n = (p.len - done).min(512);
            buf.read(at + done, &mut a[..n])?;
            p.page.read(p.offset + done, &mut b[..n])?;
            if a[..n] != b[..n] {
                return Ok(false);
            }
            done += n;
        }
        at += p.len;
    }
    Ok(true)
}

/// A fast-registration MR over pieces of pages (`map_mr_pages`, what the
/// RNBD client maps a block request's own pages with): the page rules,
/// a peer's WRITE landing in the pieces in order, a READ of them back,
/// LOCAL_INV, and the pages let go after it (`drop_pages`).
fn fast_reg_pages(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let pages = [
        SharedPage::alloc()?,
        SharedPage::alloc()?,
        SharedPage::alloc()?,
    ];
    // 3 KiB ending the first page, the second whole, 512 bytes starting
    // the third: one region of 7.5 KiB.
    let piece = |i: usize, offset: usize, len: usize| PageSlice {
        page: pages[i].clone(),
        offset,
        len,
    };
    let pieces = [piece(0, 1024, 3072), piece(1, 0, 4096), piece(2, 0, 512)];
    let total = 3072 + 4096 + 512;
    let fr = Mr::alloc_fast_reg(y.pd.core(), 4)?;
    // The rules: a piece past its page is refused; a hole ends the
    // mapping there.
    check(
        fr.map_mr_pages(&[piece(0, 4000, 200)]).is_err(),
        "a piece past its page refused",
    )?;
    check(
        fr.map_mr_pages(&[piece(0, 0, 512), piece(1, 0, 4096)])? == 1,
        "a hole ends the mapping",
    )?;
    check(fr.map_mr_pages(&pieces)? == 3, "three pieces mapped")?;
    check(
        fr.iova() == PAGES_IOVA + 1024,
        "the region starts at the first piece",
    )?;
    check(fr.length() == total as u64, "as long as the pieces")?;
    let key = (fr.lkey() & !0xff) | 0x41;
    let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let reg = SendOp::RegMr {
        mr: fr.core(),
        key,
        access,
    };
    y.qp.post_send(&[SendWr::new(1, reg, &[])])
        .map_err(|(_, e)| e)?;
    expect(&y.cq, 1, WcStatus::Success, Some(WcOpcode::RegMr))?;
    // A peer's WRITE lands in the pieces, in order.
    fill_pattern(&x.buf, 0, total, 81)?;
    let sg = [x.sge(0, total)?];
    let w = SendOp::Write {
        remote_addr: fr.iova(),
        rkey: key,
    };
    x.qp.post_send(&[SendWr::new(2, w, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 2, WcStatus::Success, Some(WcOpcode::RdmaWrite))?;
    check(
        same_as_pieces(&x.buf, 0, &pieces)?,
        "the WRITE landed in the pieces",
    )?;
    // Bytes outside the pieces are untouched (the first page's start).
    let mut head = [0xffu8; 1024];
    pages[0].read(0, &mut head)?;
    check(
        head.iter().all(|&b| b == 0),
        "the first page's head untouched",
    )?;
    // A READ of the region from 100 bytes in gets them back.
    let rsg = [x.sge(16384, total - 100)?];
    let r = SendOp::Read {
        remote_addr: fr.iova() + 100,
        rkey: key,
    };
    x.qp.post_send(&[SendWr::new(3, r, &rsg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 3, WcStatus::Success, Some(WcOpcode::RdmaRead))?;
    check(
        same(&x.buf, 100, &x.buf, 16384, total - 100)?,
        "the READ got them back",
    )?;
    // Invalid after LOCAL_INV; then its pages go, and a WRITE is refused.
    y.qp.post_send(&[SendWr::new(4, SendOp::LocalInv(key), &[])])
        .map_err(|(_, e)| e)?;
    expect(&y.cq, 4, WcStatus::Success, Some(WcOpcode::LocalInv))?;
    check(!fr.is_valid(), "invalid after LOCAL_INV")?;
    fr.drop_pages();
    check(fr.length() == 0, "its pages let go")?;
    remote_failure(&x, &y, w, 64)
}

/// Pieces of pages mapped for the device's local reads only
/// (`validate_local`, how the RTRS client sends a write's data): valid at
/// once, without a `REG_MR`; a WRITE gathers them in order; no new
/// mapping while valid; invalid after `invalidate`, then mapped and
/// valid again; a peer's WRITE under the key is refused (no remote
/// rights).
fn local_pages(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let pages = [SharedPage::alloc()?, SharedPage::alloc()?];
    let mut pat = [0u8; 256];
    for (i, page) in pages.iter().enumerate() {
        for blk in 0..16 {
            for (j, v) in pat.iter_mut().enumerate() {
                *v = (blk * 7 + j * 3 + i * 101) as u8;
            }
            page.write(blk * 256, &pat)?;
        }
    }
    let piece = |i: usize, offset: usize, len: usize| PageSlice {
        page: pages[i].clone(),
        offset,
        len,
    };
    // 2 KiB ending the first page, 1000 bytes starting the second.
    let pieces = [piece(0, 2048, 2048), piece(1, 0, 1000)];
    let total = 2048 + 1000;
    let fr = Mr::alloc_fast_reg(y.pd.core(), 4)?;
    let key = (fr.lkey() & !0xff) | 0x52;
    check(fr.validate_local(key).is_err(), "nothing mapped: refused")?;
    check(fr.map_mr_pages(&pieces)? == 2, "two pieces mapped")?;
    check(
        fr.validate_local(key ^ 0x100).is_err(),
        "another MR's index refused",
    )?;
    fr.validate_local(key)?;
    check(fr.is_valid(), "valid at once")?;
    check(fr.validate_local(key).is_err(), "valid already: refused")?;
    check(
        fr.map_mr_pages(&pieces).is_err(),
        "no new mapping while valid",
    )?;
    // The pieces, gathered through the key, land in the peer's buffer.
    let sg = [Sge {
        addr: fr.iova(),
        length: total as u32,
        lkey: key,
    }];
    let w = SendOp::Write {
        remote_addr: x.buf.addr(0),
        rkey: x.mr.rkey(),
    };
    y.qp.post_send(&[SendWr::new(1, w, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&y.cq, 1, WcStatus::Success, Some(WcOpcode::RdmaWrite))?;
    check(
        same_as_pieces(&x.buf, 0, &pieces)?,
        "the WRITE carried the pieces",
    )?;
    // Ended without a work request; its pages go; mapped again.
    check(fr.invalidate(key).is_ok(), "invalidated")?;
    check(!fr.is_valid(), "invalid after invalidate")?;
    fr.drop_pages();
    check(fr.length() == 0, "its pages let go")?;
    check(fr.map_mr_pages(&pieces)? == 2, "mapped again")?;
    let key2 = (key & !0xff) | 0x53;
    fr.validate_local(key2)?;
    check(fr.lkey() == key2, "valid under the new key")?;
    // No remote rights: a peer's WRITE under the key is refused.
    let pw = SendOp::Write {
        remote_addr: fr.iova(),
        rkey: key2,
    };
    let mut before = [0u8; 64];
    pages[0].read(2048, &mut before)?;
    fill_pattern(&x.buf, 0, 64, 93)?;
    remote_failure(&x, &y, pw, 64)?;
    let mut after = [0u8; 64];
    pages[0].read(2048, &mut after)?;
    check(before == after, "the pieces unchanged")
}

/// A fast registration made at once (`register_now`, how the RTRS server
/// registers a chunk again before its response): a peer's WRITE lands
/// under the key without a `REG_MR`; refused while valid; after
/// `invalidate` the peer's WRITE is refused.
fn register_now(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let sink = Buffer::new(8192)?;
    let fr = Mr::alloc_fast_reg(y.pd.core(), 2)?;
    check(
        fr.map_mr_sg(
            &[BufSlice {
                buf: &sink,
                offset: 0,
                len: 8192,
            }],
            4096,
        )? == 1,
        "the buffer mapped",
    )?;
    let key = (fr.lkey() & !0xff) | 0x61;
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
    check(
        fr.register_now(key ^ 0x100, rights).is_err(),
        "another MR's index refused",
    )?;
    fr.register_now(key, rights)?;
    check(fr.is_valid() && fr.lkey() == key, "valid under the key")?;
    check(
        fr.register_now(key, rights).is_err(),
        "valid already: refused",
    )?;
    fill_pattern(&x.buf, 0, 6000, 57)?;
    let sg = [x.sge(0, 6000)?];
    let w = SendOp::Write {
        remote_addr: fr.iova() + 100,
        rkey: key,
    };
    x.qp.post_send(&[SendWr::new(1, w, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 1, WcStatus::Success, Some(WcOpcode::RdmaWrite))?;
    check(same(&x.buf, 0, &sink, 100, 6000)?, "the WRITE landed")?;
    check(fr.invalidate(key).is_ok(), "invalidated")?;
    check(!fr.is_valid(), "invalid after invalidate")?;
    remote_failure(&x, &y, w, 64)
}

/// Zero-length WRITE, WRITE with immediate and READ with rkey 0 and
/// address 0 (what RTRS sends): they name no memory, so the responder does
/// not check the key (IBTA C9-88), and the QP stays usable.
fn zero_length_without_key(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    y.qp.post_recv(&[RecvWr {
        wr_id: 40,
        cqe: None,
        sg: &[],
    }])
    .map_err(|(_, e)| e)?;
    let ops = [
        (
            41,
            SendOp::Write {
                remote_addr: 0,
                rkey: 0,
            },
            WcOpcode::RdmaWrite,
        ),
        (
            42,
            SendOp::WriteWithImm {
                remote_addr: 0,
                rkey: 0,
                imm: 0x0bad_cafe,
            },
            WcOpcode::RdmaWrite,
        ),
        (
            43,
            SendOp::Read {
                remote_addr: 0,
                rkey: 0,
            },
            WcOpcode::RdmaRead,
        ),
    ];
    for (id, op, want) in ops {
        x.qp.post_send(&[SendWr::new(id, op, &[])])
            .map_err(|(_, e)| e)?;
        let wc = expect(&x.cq, id, WcStatus::Success, Some(want))?;
        check(wc.byte_len == 0, "zero bytes")?;
    }
    let r = expect(
        &y.cq,
        40,
        WcStatus::Success,
        Some(WcOpcode::RecvRdmaWithImm),
    )?;
    check(
        r.byte_len == 0 && r.wc_flags.contains(WcFlags::WITH_IMM) && r.imm_data == 0x0bad_cafe,
        "zero-length WRITE with immediate received",
    )?;
    check(
        x.qp.state() == QpState::Rts && y.qp.state() == QpState::Rts,
        "both QPs still in RTS",
    )?;
    // And the connection still carries data.
    transfer(&x, &y, Op::Write, 4096, 77)
}

/// Every operation, sizes from 0 to 1 MiB.
fn all_ops(a: Port<'_>, b: Port<'_>, seed: u32) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let mut rng = Rng(seed);
    let fixed = [0usize, 1, 1023, 1024, 1025, 3 * 1024 + 5, MIB];
    for op in [Op::Send, Op::SendImm, Op::Write, Op::WriteImm, Op::Read] {
        for (i, &len) in fixed.iter().enumerate() {
            transfer(&x, &y, op, len, seed + i as u32)?;
        }
        for i in 0..3 {
            let len = rng.below(MIB as u32 + 1) as usize;
            transfer(&x, &y, op, len, seed + 100 + i)?;
        }
    }
    // And the other way.
    for op in [Op::Send, Op::Write, Op::Read] {
        transfer(&y, &x, op, 70_000, seed + 200)?;
    }
    Ok(())
}

/// Compare-and-swap and fetch-and-add, both outcomes.
fn atomics(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let target = 4096usize;
    y.buf.write(target, &100u64.to_ne_bytes())?;
    let remote_addr = y.buf.addr(target);
    let rkey = y.mr.rkey();
    let mut out = [0u8; 8];
    let cases: [(SendOp<'_>, u64, u64); 3] = [
        (
            SendOp::CmpAndSwp {
                remote_addr,
                rkey,
                compare: 100,
                swap: 555,
            },
            100,
            555,
        ),
        (
            SendOp::CmpAndSwp {
                remote_addr,
                rkey,
                compare: 1,
                swap: 9,
            },
            555,
            555,
        ),
        (
            SendOp::FetchAndAdd {
                remote_addr,
                rkey,
                add: 45,
            },
            555,
            600,
        ),
    ];
    for (i, (op, orig, after)) in cases.into_iter().enumerate() {
        let sg = [x.sge(64, 8)?];
        x.qp.post_send(&[SendWr::new(i as u64, op, &sg)])
            .map_err(|(_, e)| e)?;
        let wc = expect(&x.cq, i as u64, WcStatus::Success, None)?;
        check(
            matches!(wc.opcode, WcOpcode::CompSwap | WcOpcode::FetchAdd),
            "atomic opcode",
        )?;
        x.buf.read(64, &mut out)?;
        check(u64::from_ne_bytes(out) == orig, "original value returned")?;
        y.buf.read(target, &mut out)?;
        check(u64::from_ne_bytes(out) == after, "remote value")?;
    }
    Ok(())
}

/// ATOMIC_WRITE: 8 bytes stored at once, acknowledged (as the kernel's rxe
/// does) by a zero-length READ RESPONSE ONLY; then a READ right behind one
/// checks the order of completions.
fn atomic_write(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let target = 4096usize;
    y.buf.write(target, &1u64.to_ne_bytes())?;
    let remote_addr = y.buf.addr(target);
    let rkey = y.mr.rkey();
    for (i, value) in [0x0123_4567_89ab_cdefu64, 0xfeed_f00d_0000_0042]
        .into_iter()
        .enumerate()
    {
        x.buf.write(64, &value.to_ne_bytes())?;
        let sg = [x.sge(64, 8)?];
        x.qp.post_send(&[SendWr::new(
            i as u64,
            SendOp::AtomicWrite { remote_addr, rkey },
            &sg,
        )])
        .map_err(|(_, e)| e)?;
        expect(
            &x.cq,
            i as u64,
            WcStatus::Success,
            Some(WcOpcode::AtomicWrite),
        )?;
        let mut out = [0u8; 8];
        y.buf.read(target, &mut out)?;
        check(u64::from_ne_bytes(out) == value, "remote value")?;
    }
    // An ATOMIC_WRITE and a READ of the same bytes posted together: both
    // complete, in order, and the READ sees the written value.
    x.buf.write(64, &7u64.to_ne_bytes())?;
    x.buf.fill(128, 8, 0)?;
    let sg = [x.sge(64, 8)?];
    let rsg = [x.sge(128, 8)?];
    x.qp.post_send(&[
        SendWr::new(10, SendOp::AtomicWrite { remote_addr, rkey }, &sg),
        SendWr::new(11, SendOp::Read { remote_addr, rkey }, &rsg),
    ])
    .map_err(|(_, e)| e)?;
    expect(&x.cq, 10, WcStatus::Success, Some(WcOpcode::AtomicWrite))?;
    expect(&x.cq, 11, WcStatus::Success, Some(WcOpcode::RdmaRead))?;
    let mut out = [0u8; 8];
    x.buf.read(128, &mut out)?;
    check(u64::from_ne_bytes(out) == 7, "READ after ATOMIC_WRITE")?;
    check(x.qp.state() == QpState::Rts, "QP still in RTS")
}

/// UC: SEND and WRITE with immediate, multi-packet.
fn uc(a: Port<'_>, b: Port<'_>) -> Result {
    let o = Opts {
        qp_type: QpType::Uc,
        ..OPTS
    };
    let (x, y) = pair(a, b, &o)?;
    for (i, len) in [0usize, 1, 1024, 5000, 65_536].into_iter().enumerate() {
        transfer(&x, &y, Op::Send, len, 300 + i as u32)?;
        transfer(&x, &y, Op::WriteImm, len, 400 + i as u32)?;
        transfer(&y, &x, Op::Write, len, 500 + i as u32)?;
    }
    Ok(())
}

/// A UC SEND of `len` bytes from `x`'s buffer at 0 into a receive of
/// `room` bytes at 0 of `y`'s, with `wr_id`; the sender's completion is
/// checked (UC completes once the message is out).
fn uc_send(x: &End, y: &End, len: usize, room: usize, wr_id: u64, seed: u32) -> Result {
    fill_pattern(&x.buf, 0, len, seed)?;
    if room > 0 {
        let rs = [y.sge(0, room)?];
        y.qp.post_recv(&[RecvWr {
            wr_id,
            cqe: None,
            sg: &rs,
        }])
        .map_err(|(_, e)| e)?;
    }
    let sg = [x.sge(0, len)?];
    x.qp.post_send(&[SendWr::new(wr_id, SendOp::Send, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, wr_id, WcStatus::Success, Some(WcOpcode::Send))?;
    Ok(())
}

/// UC, a sender that starts over: its QP goes through RESET and back to
/// RTS with the first PSN it had, which is now behind the one the
/// responder expects. Its first packet starts a new message all the same
/// (as the C rxe's UC responder resynchronises), and the message arrives.
fn uc_resync(a: Port<'_>, b: Port<'_>) -> Result {
    let o = Opts {
        qp_type: QpType::Uc,
        ..OPTS
    };
    let (x, y) = pair(a, b, &o)?;
    for round in 0..2u64 {
        uc_send(&x, &y, 100, 4096, 20 + round, 60 + round as u32)?;
        let wc = expect(&y.cq, 20 + round, WcStatus::Success, Some(WcOpcode::Recv))?;
        check(wc.byte_len == 100, "receive byte count")?;
        check(same(&x.buf, 0, &y.buf, 0, 100)?, "the message's bytes")?;
        // Back to the first PSN: the next message is one PSN behind.
        x.qp.modify(
            &QpAttr {
                qp_state: QpState::Reset,
                ..QpAttr::default()
            },
            AttrMask::STATE,
        )?;
        x.connect(&y, QpState::Rts)?;
    }
    // And a multi-packet message after it, behind again.
    uc_send(&x, &y, 5000, 8192, 30, 70)?;
    let wc = expect(&y.cq, 30, WcStatus::Success, Some(WcOpcode::Recv))?;
    check(wc.byte_len == 5000, "multi-packet receive byte count")?;
    check(
        same(&x.buf, 0, &y.buf, 0, 5000)?,
        "the multi-packet message's bytes",
    )?;
    check(y.state()? == QpState::Rts, "the responder stays in RTS")
}

/// UC, a message longer than the receive posted: as the C rxe, the
/// message is dropped (no completion) and the receive kept for the next
/// one, which fits and arrives in it; the QP stays in RTS. `rc.sh` checks
/// that `length_err` counted it.
fn uc_too_long(a: Port<'_>, b: Port<'_>) -> Result {
    let o = Opts {
        qp_type: QpType::Uc,
        ..OPTS
    };
    let (x, y) = pair(a, b, &o)?;
    // One packet over the receive, then three packets over it.
    uc_send(&x, &y, 200, 64, 40, 80)?;
    uc_send(&x, &y, 3000, 0, 41, 81)?;
    quiet(&y.cq, 200)?;
    check(y.state()? == QpState::Rts, "the responder stays in RTS")?;
    uc_send(&x, &y, 64, 0, 42, 82)?;
    let wc = expect(&y.cq, 40, WcStatus::Success, Some(WcOpcode::Recv))?;
    check(wc.byte_len == 64, "the kept receive takes the next message")?;
    check(same(&x.buf, 0, &y.buf, 0, 64)?, "its bytes")?;
    check(y.state()? == QpState::Rts, "the responder still in RTS")
}

/// Inline data, unsignaled requests, solicited events, zero-length SEND.
fn inline_unsignaled(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    fill_pattern(&x.buf, 0, 100, 9)?;
    y.buf.fill(0, 4096, 0)?;
    let rs = [y.sge(0, 4096)?];
    for id in 0..2 {
        y.qp.post_recv(&[RecvWr {
            wr_id: id,
            cqe: None,
            sg: &rs,
        }])
        .map_err(|(_, e)| e)?;
    }
    let sg = [x.sge(0, 100)?];
    let mut w = SendWr::new(1, SendOp::Send, &sg);
    w.flags = SendFlags::SIGNALED | SendFlags::INLINE | SendFlags::SOLICITED;
    // Unsignaled WRITE first: only the SEND after it completes.
    let wsg = [x.sge(0, 100)?];
    let mut u = SendWr::new(
        2,
        SendOp::Write {
            remote_addr: y.buf.addr(8192),
            rkey: y.mr.rkey(),
        },
        &wsg,
    );
    u.flags = SendFlags::NONE;
    x.qp.post_send(&[u, w]).map_err(|(_, e)| e)?;
    expect(&x.cq, 1, WcStatus::Success, Some(WcOpcode::Send))?;
    let r = expect(&y.cq, 0, WcStatus::Success, Some(WcOpcode::Recv))?;
    check(r.byte_len == 100, "inline length")?;
    check(same(&x.buf, 0, &y.buf, 0, 100)?, "inline bytes")?;
    check(
        same(&x.buf, 0, &y.buf, 8192, 100)?,
        "unsignaled write bytes",
    )?;
    quiet(&x.cq, 20)?;
    // Zero-length SEND with immediate.
    x.qp.post_send(&[SendWr::new(3, SendOp::SendWithImm(77), &[])])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 3, WcStatus::Success, None)?;
    let r = expect(&y.cq, 1, WcStatus::Success, Some(WcOpcode::Recv))?;
    check(
        r.byte_len == 0 && r.imm_data == 77,
        "zero-length SEND with immediate",
    )
}

/// Many QP pairs with traffic at the same time.
fn many_qps(a: Port<'_>, b: Port<'_>) -> Result {
    const N: usize = 8;
    const LEN: usize = 64 * 1024;
    let mut pairs = KVec::new();
    for _ in 0..N {
        pairs.push(pair(a, b, &OPTS)?, GFP_KERNEL)?;
    }
    for (i, (x, y)) in pairs.iter().enumerate() {
        for k in 0..4 {
            fill_pattern(&x.buf, k * LEN, LEN, (i * 10 + k) as u32)?;
            let sg = [x.sge(k * LEN, LEN)?];
            let wr = SendWr::new(
                k as u64,
                SendOp::Write {
                    remote_addr: y.buf.addr(k * LEN),
                    rkey: y.mr.rkey(),
                },
                &sg,
            );
            x.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
        }
    }
    for (x, y) in pairs.iter() {
        let wcs = poll(&x.cq, 4)?;
        for (k, wc) in wcs.iter().enumerate() {
            if wc.status != WcStatus::Success || wc.wr_id != k as u64 {
                pr_err!(
                    "QP {}: completion {}: wr_id {} status {:?}\n",
                    x.qp.qpn(),
                    k,
                    wc.wr_id,
                    wc.status
                );
                return Err(EINVAL);
            }
        }
        check(same(&x.buf, 0, &y.buf, 0, 4 * LEN)?, "data of every QP")?;
    }
    Ok(())
}

/// A request that must fail at the responder: the requester's status, and
/// both QPs in the error state with the next request flushed.
fn remote_failure(x: &End, y: &End, op: SendOp<'_>, len: usize) -> Result {
    remote_failure_with(x, y, op, len, WcStatus::RemAccessErr)
}

/// [`remote_failure`], the requester's failed WQE completing with
/// `status`.
fn remote_failure_with(x: &End, y: &End, op: SendOp<'_>, len: usize, status: WcStatus) -> Result {
    let sg = [x.sge(0, len)?];
    let next = [x.sge(0, 8)?];
    x.qp.post_send(&[SendWr::new(1, op, &sg), SendWr::new(2, SendOp::Send, &next)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 1, status, None)?;
    expect(&x.cq, 2, WcStatus::WrFlushErr, None)?;
    check(x.state()? == QpState::Err, "requester in error")?;
    // The responder went to the error state when it sent the NAK.
    for _ in 0..100 {
        if y.state()? == QpState::Err {
            return Ok(());
        }
        time::msleep(10);
    }
    check(false, "responder in error")
}

/// Records the QP and SRQ events of a device.
#[pin_data]
struct QpEvents {
    #[pin]
    seen: SpinLock<KVec<(EventKind, u32)>>,
}

impl EventHandler for QpEvents {
    fn handle(&self, _dev: &Device, event: &Event) {
        if let Element::Qp(n) | Element::Srq(n) = event.element {
            let _ = self.seen.lock().push((event.kind, n), GFP_ATOMIC);
        }
    }
}

/// Waits for `kind` on QP `qpn`.
fn wait_event(ev: &QpEvents, kind: EventKind, qpn: u32) -> Result {
    for _ in 0..200 {
        if ev.seen.lock().iter().any(|&(k, n)| k == kind && n == qpn) {
            return Ok(());
        }
        time::msleep(10);
    }
    pr_err!("no {:?} event for QP {}\n", kind, qpn);
    Err(EINVAL)
}

fn access_errors(a: Port<'_>, b: Port<'_>) -> Result {
    let o = OPTS;
    let ev = Arc::pin_init(
        pin_init!(QpEvents {
            seen <- new_spinlock!(KVec::new(), "QpEvents::seen"),
        }),
        GFP_KERNEL,
    )?;
    // A bad rkey: the responder's ULP gets an access error event.
    let (x, y) = pair(a, b, &o)?;
    let _reg = y.dev.arc().register_event_handler(ev.clone())?;
    let bad = SendOp::Write {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey() ^ 0x80,
    };
    remote_failure(&x, &y, bad, 64)?;
    wait_event(&ev, EventKind::QpAccessErr, y.qp.qpn())?;
    // Out of bounds.
    let (x, y) = pair(a, b, &o)?;
    let oob = SendOp::Read {
        remote_addr: y.buf.addr(BUF - 100),
        rkey: y.mr.rkey(),
    };
    remote_failure(&x, &y, oob, 200)?;
    // An MR without remote write.
    let ro = Opts {
        mr_access: Access::LOCAL_WRITE | Access::REMOTE_READ,
        ..o
    };
    let (x, y) = pair(a, b, &ro)?;
    let no_write = SendOp::Write {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
    };
    remote_failure(&x, &y, no_write, 64)?;
    // A QP that grants no remote read: an invalid request, as the C rxe
    // answers it (its unsupported opcode, class C), not an access error.
    let nr = Opts {
        access: Access::REMOTE_WRITE,
        ..o
    };
    let (x, y) = pair(a, b, &nr)?;
    let no_read = SendOp::Read {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
    };
    remote_failure_with(&x, &y, no_read, 64, WcStatus::RemInvReqErr)?;
    // The same for a WRITE at a QP that grants read only, and an atomic
    // at one that grants no atomics.
    let nw = Opts {
        access: Access::REMOTE_READ,
        ..o
    };
    let (x, y) = pair(a, b, &nw)?;
    let no_write = SendOp::Write {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
    };
    remote_failure_with(&x, &y, no_write, 64, WcStatus::RemInvReqErr)?;
    let (x, y) = pair(a, b, &nr)?;
    let no_atomic = SendOp::FetchAndAdd {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
        add: 1,
    };
    remote_failure_with(&x, &y, no_atomic, 8, WcStatus::RemInvReqErr)?;
    // A SEND with invalidate of a key that names nothing: the receive
    // completes with REM_INV_REQ_ERR, as the C rxe's (class J), and the
    // responder goes to the error state.
    let (x, y) = pair(a, b, &o)?;
    let rs = [y.sge(0, 64)?];
    y.qp.post_recv(&[RecvWr {
        wr_id: 9,
        cqe: None,
        sg: &rs,
    }])
    .map_err(|(_, e)| e)?;
    x.qp.post_send(&[SendWr::new(
        9,
        SendOp::SendWithInv(y.mr.rkey() ^ 0x8000),
        &[],
    )])
    .map_err(|(_, e)| e)?;
    expect(&y.cq, 9, WcStatus::RemInvReqErr, None)?;
    check(y.state()? == QpState::Err, "the responder in error")?;
    // A receive too small for the SEND: as the C rxe (its copy into the
    // receive fails, a malformed WQE, class A), the receiver's WQE
    // completes with LOC_QP_OP_ERR and the sender gets a remote
    // operational error.
    let (x, y) = pair(a, b, &o)?;
    let rs = [y.sge(0, 10)?];
    y.qp.post_recv(&[RecvWr {
        wr_id: 5,
        cqe: None,
        sg: &rs,
    }])
    .map_err(|(_, e)| e)?;
    let sg = [x.sge(0, 100)?];
    x.qp.post_send(&[SendWr::new(1, SendOp::Send, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 1, WcStatus::RemOpErr, None)?;
    expect(&y.cq, 5, WcStatus::LocQpOpErr, None)?;
    wait_event(&ev, EventKind::QpFatal, y.qp.qpn())
}

/// A receive whose memory does not check out, RC and UC: as the C rxe
/// (its malformed WQE, class A, for every QP type), the receive completes
/// with LOC_QP_OP_ERR and the responder goes to the error state; RC NAKs
/// a remote operational error.
fn bad_recv_memory(a: Port<'_>, b: Port<'_>) -> Result {
    for qp_type in [QpType::Rc, QpType::Uc] {
        let o = Opts { qp_type, ..OPTS };
        // A bad lkey, then an SGE past the end of an MR over the
        // buffer's first 4 KiB.
        for outside in [false, true] {
            let (x, y) = pair(a, b, &o)?;
            let small = Mr::reg_buffer(y.pd.core(), &y.buf, 0, 4096, o.mr_access)?;
            let rs = if outside {
                [y.buf.sge(8192, 64, small.lkey())?]
            } else {
                [y.buf.sge(0, 64, y.mr.lkey() ^ 0x80)?]
            };
            y.qp.post_recv(&[RecvWr {
                wr_id: 7,
                cqe: None,
                sg: &rs,
            }])
            .map_err(|(_, e)| e)?;
            let sg = [x.sge(0, 64)?];
            x.qp.post_send(&[SendWr::new(1, SendOp::Send, &sg)])
                .map_err(|(_, e)| e)?;
            let want = if qp_type == QpType::Rc {
                WcStatus::RemOpErr
            } else {
                WcStatus::Success
            };
            expect(&x.cq, 1, want, None)?;
            expect(&y.cq, 7, WcStatus::LocQpOpErr, None)?;
            check(y.state()? == QpState::Err, "the responder in error")?;
        }
    }
    Ok(())
}

/// A WRITE with immediate whose rkey does not check out, after it took
/// its receive: as the C rxe, RC completes that receive with
/// REM_ACCESS_ERR (class C, the QP in error); UC through an SRQ completes
/// the SRQ's receive with REM_ACCESS_ERR and stays in RTS (class D), its
/// next receive taking the next message; UC on its own receive queue
/// drops the message and keeps the receive (class D).
fn write_imm_bad_rkey(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let rs = [y.sge(0, 64)?];
    y.qp.post_recv(&[RecvWr {
        wr_id: 8,
        cqe: None,
        sg: &rs,
    }])
    .map_err(|(_, e)| e)?;
    let bad = SendOp::WriteWithImm {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey() ^ 0x80,
        imm: 5,
    };
    let sg = [x.sge(0, 64)?];
    x.qp.post_send(&[SendWr::new(1, bad, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 1, WcStatus::RemAccessErr, None)?;
    expect(&y.cq, 8, WcStatus::RemAccessErr, None)?;
    // UC, with an SRQ.
    let o = Opts {
        qp_type: QpType::Uc,
        ..OPTS
    };
    let x = End::new(a, &o)?;
    let y = End::new(b, &o)?;
    let srq = Srq::create(
        y.pd.core(),
        &SrqAttr {
            max_wr: 8,
            max_sge: 1,
            srq_limit: 0,
        },
    )?;
    let q = Qp::create(
        y.pd.core(),
        &QpInitAttr {
            qp_type: QpType::Uc,
            send_cq: y.cq.core(),
            recv_cq: y.cq.core(),
            srq: Some(srq.core()),
            cap: o.cap,
            sq_sig_all: true,
            port_num: 1,
        },
    )?;
    let to_q = rc::Remote {
        qpn: q.qpn(),
        psn: o.psn,
        av: x.av(y.gid)?,
    };
    let to_x = rc::Remote {
        qpn: x.qp.qpn(),
        psn: o.psn,
        av: y.av(x.gid)?,
    };
    rc::modify_to(&x.qp, &o, &to_q, QpState::Rts)?;
    rc::modify_to(&q, &o, &to_x, QpState::Rts)?;
    for i in 0..2u64 {
        let rs = [y.sge(4096 * i as usize, 4096)?];
        srq.post_recv(&[RecvWr {
            wr_id: 20 + i,
            cqe: None,
            sg: &rs,
        }])
        .map_err(|(_, e)| e)?;
    }
    // This pair's own SGE and key (the first pair's are of another PD).
    let sg = [x.sge(0, 64)?];
    x.qp.post_send(&[SendWr::new(2, bad_key(&y), &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 2, WcStatus::Success, None)?;
    expect(&y.cq, 20, WcStatus::RemAccessErr, None)?;
    check(
        q.query()?.qp_state == QpState::Rts,
        "UC with an SRQ stays in RTS",
    )?;
    fill_pattern(&x.buf, 0, 64, 90)?;
    x.qp.post_send(&[SendWr::new(3, SendOp::Send, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 3, WcStatus::Success, None)?;
    let wc = expect(&y.cq, 21, WcStatus::Success, Some(WcOpcode::Recv))?;
    check(
        wc.byte_len == 64,
        "the next SRQ receive takes the next message",
    )?;
    check(same(&x.buf, 0, &y.buf, 4096, 64)?, "its bytes")?;
    // UC on its own receive queue: dropped, the receive kept.
    let (x, y) = pair(a, b, &o)?;
    uc_send_imm_bad(&x, &y, bad_key(&y))?;
    quiet(&y.cq, 200)?;
    check(y.state()? == QpState::Rts, "UC stays in RTS")?;
    uc_send(&x, &y, 64, 0, 31, 91)?;
    let wc = expect(&y.cq, 30, WcStatus::Success, Some(WcOpcode::Recv))?;
    check(wc.byte_len == 64, "the kept receive takes the next message")
}

/// A WRITE with immediate to `y` under a bad rkey.
fn bad_key(y: &End) -> SendOp<'static> {
    SendOp::WriteWithImm {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey() ^ 0x80,
        imm: 6,
    }
}

/// Posts a receive (wr_id 30) on `y` and sends `op` from `x` (UC).
fn uc_send_imm_bad(x: &End, y: &End, op: SendOp<'_>) -> Result {
    let rs = [y.sge(0, 4096)?];
    y.qp.post_recv(&[RecvWr {
        wr_id: 30,
        cqe: None,
        sg: &rs,
    }])
    .map_err(|(_, e)| e)?;
    let sg = [x.sge(0, 64)?];
    x.qp.post_send(&[SendWr::new(4, op, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 4, WcStatus::Success, None)?;
    Ok(())
}

/// RNR: retried until a receive is posted; with a limit, exhausted.
fn rnr(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let sg = [x.sge(0, 3000)?];
    fill_pattern(&x.buf, 0, 3000, 5)?;
    x.qp.post_send(&[SendWr::new(1, SendOp::Send, &sg)])
        .map_err(|(_, e)| e)?;
    time::msleep(50);
    quiet(&x.cq, 1)?;
    let rs = [y.sge(0, 4096)?];
    y.qp.post_recv(&[RecvWr {
        wr_id: 2,
        cqe: None,
        sg: &rs,
    }])
    .map_err(|(_, e)| e)?;
    expect(&x.cq, 1, WcStatus::Success, None)?;
    expect(&y.cq, 2, WcStatus::Success, None)?;
    check(same(&x.buf, 0, &y.buf, 0, 3000)?, "data after RNR")?;
    let limited = Opts {
        rnr_retry: 2,
        ..OPTS
    };
    let (x, _y) = pair(a, b, &limited)?;
    x.qp.post_send(&[SendWr::new(3, SendOp::Send, &sg[..0])])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 3, WcStatus::RnrRetryExcErr, None)?;
    Ok(())
}

/// A peer that does not answer: retransmission after the local ACK
/// timeout until it does, and the retry count exhausted when it never
/// does.
fn timeouts(a: Port<'_>, b: Port<'_>) -> Result {
    let o = Opts {
        // About 67 ms.
        timeout: 14,
        ..OPTS
    };
    let x = End::new(a, &o)?;
    let y = End::new(b, &o)?;
    x.connect(&y, QpState::Rts)?;
    // y stays in INIT for now: it drops what arrives.
    y.connect(&x, QpState::Init)?;
    fill_pattern(&x.buf, 0, 5000, 3)?;
    let sg = [x.sge(0, 5000)?];
    let w = SendWr::new(
        1,
        SendOp::Write {
            remote_addr: y.buf.addr(0),
            rkey: y.mr.rkey(),
        },
        &sg,
    );
    x.qp.post_send(&[w]).map_err(|(_, e)| e)?;
    time::msleep(150);
    y.connect(&x, QpState::Rts)?;
    expect(&x.cq, 1, WcStatus::Success, None)?;
    check(
        same(&x.buf, 0, &y.buf, 0, 5000)?,
        "data after retransmission",
    )?;
    let once = Opts { retry_cnt: 1, ..o };
    let x = End::new(a, &once)?;
    let y = End::new(b, &once)?;
    x.connect(&y, QpState::Rts)?;
    y.connect(&x, QpState::Init)?;
    x.qp.post_send(&[SendWr::new(2, SendOp::Send, &sg[..0])])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 2, WcStatus::RetryExcErr, None)?;
    Ok(())
}

/// Moving to the error state flushes outstanding requests, in order.
fn flush(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let rs = [y.sge(0, 64)?];
    for id in 0..8 {
        y.qp.post_recv(&[RecvWr {
            wr_id: id,
            cqe: None,
            sg: &rs,
        }])
        .map_err(|(_, e)| e)?;
    }
    let err = QpAttr {
        qp_state: QpState::Err,
        ..QpAttr::default()
    };
    y.qp.modify(&err, AttrMask::STATE)?;
    let wcs = poll(&y.cq, 8)?;
    for (i, wc) in wcs.iter().enumerate() {
        check(
            wc.status == WcStatus::WrFlushErr && wc.wr_id == i as u64,
            "receive flushed in order",
        )?;
    }
    // Requests in flight towards a QP in error: they complete, the first
    // with an error, the others flushed.
    let sg = [x.sge(0, MIB)?];
    let mut wrs = KVec::new();
    for id in 0..6u64 {
        let mut w = SendWr::new(
            id,
            SendOp::Write {
                remote_addr: y.buf.addr(0),
                rkey: y.mr.rkey(),
            },
            &sg,
        );
        w.flags = SendFlags::SIGNALED;
        wrs.push(w, GFP_KERNEL)?;
    }
    x.qp.post_send(&wrs).map_err(|(_, e)| e)?;
    time::msleep(5);
    x.qp.modify(&err, AttrMask::STATE)?;
    let wcs = poll(&x.cq, 6)?;
    let mut flushed = 0;
    for (i, wc) in wcs.iter().enumerate() {
        check(wc.wr_id == i as u64, "send completions in order")?;
        if wc.status == WcStatus::WrFlushErr {
            flushed += 1;
        } else {
            check(flushed == 0, "flushes come last")?;
        }
    }
    check(flushed > 0, "requests flushed")
}

/// QPs destroyed with megabytes in flight; the device's objects are all
/// gone afterwards.
fn destroy_under_traffic(a: Port<'_>, b: Port<'_>) -> Result {
    let dev = device::get_by_name(a.name).ok_or(ENODEV)?;
    let before = dev.resource_counts();
    for round in 0..4 {
        let (x, y) = pair(a, b, &OPTS)?;
        let sg = [x.sge(0, MIB)?];
        for id in 0..16u64 {
            let op = if id % 2 == 0 {
                SendOp::Write {
                    remote_addr: y.buf.addr(0),
                    rkey: y.mr.rkey(),
                }
            } else {
                SendOp::Read {
                    remote_addr: y.buf.addr(0),
                    rkey: y.mr.rkey(),
                }
            };
            x.qp.post_send(&[SendWr::new(id, op, &sg)])
                .map_err(|(_, e)| e)?;
        }
        time::msleep(round * 3);
        // Destroy order alternates: requester first, then responder first.
        if round % 2 == 0 {
            drop(x);
            drop(y);
        } else {
            drop(y);
            drop(x);
        }
    }
    check(dev.resource_counts() == before, "no object left")
}

/// Fast registration and invalidation on rxe's queues: REG_MR on the
/// responder's QP, a WRITE through the new rkey across two buffers, SEND
/// with invalidate, then the invalidated key refused; and a DMA MR.
fn memory_keys(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    let p1 = Buffer::new(8192)?;
    let p2 = Buffer::new(8192)?;
    let fr = Mr::alloc_fast_reg(y.pd.core(), 4)?;
    let slices = [
        BufSlice {
            buf: &p1,
            offset: 0,
            len: 8192,
        },
        BufSlice {
            buf: &p2,
            offset: 0,
            len: 8192,
        },
    ];
    check(fr.map_mr_sg(&slices, 4096)? == 2, "two pages mapped")?;
    let key = (fr.lkey() & !0xff) | 0x42;
    let reg = SendOp::RegMr {
        mr: fr.core(),
        key,
        access: Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ,
    };
    y.qp.post_send(&[SendWr::new(1, reg, &[])])
        .map_err(|(_, e)| e)?;
    expect(&y.cq, 1, WcStatus::Success, Some(WcOpcode::RegMr))?;
    check(fr.is_valid() && fr.rkey() == key, "valid under the new key")?;
    fill_pattern(&x.buf, 0, 400, 42)?;
    let sg = [x.sge(0, 400)?];
    let w = SendOp::Write {
        remote_addr: fr.iova() + 8000,
        rkey: key,
    };
    x.qp.post_send(&[SendWr::new(2, w, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 2, WcStatus::Success, Some(WcOpcode::RdmaWrite))?;
    check(
        same(&x.buf, 0, &p1, 8000, 192)? && same(&x.buf, 192, &p2, 0, 208)?,
        "data split over the two buffers",
    )?;
    // SEND with invalidate: the receiver learns the key, which is dead.
    let rs = [y.sge(0, 64)?];
    y.qp.post_recv(&[RecvWr {
        wr_id: 3,
        cqe: None,
        sg: &rs,
    }])
    .map_err(|(_, e)| e)?;
    x.qp.post_send(&[SendWr::new(3, SendOp::SendWithInv(key), &sg[..0])])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 3, WcStatus::Success, None)?;
    let r = expect(&y.cq, 3, WcStatus::Success, Some(WcOpcode::Recv))?;
    check(
        r.wc_flags.contains(WcFlags::WITH_INVALIDATE) && r.invalidate_rkey == key,
        "invalidated key in the completion",
    )?;
    check(!fr.is_valid(), "invalid after SEND with invalidate")?;
    remote_failure(&x, &y, w, 64)?;
    // The PD's global key: a DMA MR over every buffer.
    let global = Opts {
        pd_flags: PdFlags::UNSAFE_GLOBAL_RKEY,
        ..OPTS
    };
    let (x, y) = pair(a, b, &global)?;
    let rkey = y.pd.unsafe_global_rkey().ok_or(EINVAL)?;
    fill_pattern(&x.buf, 0, 3000, 43)?;
    let sg = [x.sge(0, 3000)?];
    let w = SendOp::Write {
        remote_addr: y.buf.addr(100),
        rkey,
    };
    x.qp.post_send(&[SendWr::new(4, w, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 4, WcStatus::Success, None)?;
    check(
        same(&x.buf, 0, &y.buf, 100, 3000)?,
        "written through the DMA MR",
    )?;
    Ok(())
}

/// Numbers are not reused at once: an rkey whose MR was deregistered does
/// not name the MR registered next (the remote access fails and the new
/// MR's memory is untouched), every registration gets its own key byte,
/// and QP numbers start at 16 and do not come back right after a QP went.
fn stale_keys_and_qpns(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    check(x.qp.qpn() >= 16 && y.qp.qpn() >= 16, "QPNs from 16")?;
    let rw = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let old = Buffer::new(4096)?;
    let fresh = Buffer::new(4096)?;
    // Registrations and deregistrations: no index comes back, and the key
    // bytes differ (equal 16 times in a row with chance 256^-15).
    let mut keys = KVec::new();
    for _ in 0..16 {
        let mr = Mr::reg_buffer(y.pd.core(), &old, 0, 4096, rw)?;
        keys.push(mr.rkey(), GFP_KERNEL)?;
        mr.dereg().map_err(|(_, e)| e)?;
    }
    for (i, k) in keys.iter().enumerate() {
        check(
            keys[i + 1..].iter().all(|o| o >> 8 != k >> 8),
            "an MR index reused at once",
        )?;
    }
    check(
        keys.iter().any(|k| (k & 0xff) != (keys[0] & 0xff)),
        "key bytes vary",
    )?;
    let stale = Mr::reg_buffer(y.pd.core(), &old, 0, 4096, rw)?;
    let stale_key = stale.rkey();
    stale.dereg().map_err(|(_, e)| e)?;
    fill_pattern(&fresh, 0, 4096, 9)?;
    let mr = Mr::reg_buffer(y.pd.core(), &fresh, 0, 4096, rw)?;
    check(mr.rkey() != stale_key, "a new key for the new MR")?;
    fill_pattern(&x.buf, 0, 64, 10)?;
    let w = SendOp::Write {
        remote_addr: mr.iova(),
        rkey: stale_key,
    };
    remote_failure(&x, &y, w, 64)?;
    let copy = Buffer::new(4096)?;
    fill_pattern(&copy, 0, 4096, 9)?;
    check(
        same(&fresh, 0, &copy, 0, 4096)?,
        "the new MR's memory untouched",
    )?;
    // A QP destroyed and another created: a new number.
    let qpn = x.qp.qpn();
    let (x2, _y2) = {
        drop(x);
        pair(a, b, &OPTS)?
    };
    check(x2.qp.qpn() != qpn, "a QPN reused at once")?;
    Ok(())
}

/// FLUSH on rxe: a range and the whole MR with the global type complete;
/// a persistent flush on an MR without that right, and any flush on a QP
/// that does not grant it, fail at the responder.
fn flush_ops(a: Port<'_>, b: Port<'_>) -> Result {
    let flushable = Access(rc::ALL_ACCESS.0 | Access::FLUSH_GLOBAL.0);
    // The QP grants both flush types, the MR only the global one.
    let o = Opts {
        access: Access(flushable.0 | Access::FLUSH_PERSISTENT.0),
        mr_access: flushable,
        ..OPTS
    };
    let global = FlushType {
        global: true,
        persistent: false,
    };
    let (x, y) = pair(a, b, &o)?;
    for (i, whole_mr) in [false, true].into_iter().enumerate() {
        let f = SendOp::Flush {
            remote_addr: y.buf.addr(4096),
            rkey: y.mr.rkey(),
            length: 8192,
            flush: global,
            whole_mr,
        };
        x.qp.post_send(&[SendWr::new(i as u64, f, &[])])
            .map_err(|(_, e)| e)?;
        expect(&x.cq, i as u64, WcStatus::Success, Some(WcOpcode::Flush))?;
    }
    // Data written before a FLUSH is there when it completes.
    fill_pattern(&x.buf, 0, 3000, 77)?;
    let sg = [x.sge(0, 3000)?];
    let w = SendOp::Write {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
    };
    let f = SendOp::Flush {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
        length: 3000,
        flush: global,
        whole_mr: false,
    };
    x.qp.post_send(&[SendWr::new(5, w, &sg), SendWr::new(6, f, &[])])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 5, WcStatus::Success, Some(WcOpcode::RdmaWrite))?;
    expect(&x.cq, 6, WcStatus::Success, Some(WcOpcode::Flush))?;
    check(
        same(&x.buf, 0, &y.buf, 0, 3000)?,
        "written before the flush",
    )?;
    let persistent = SendOp::Flush {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
        length: 64,
        flush: FlushType {
            global: false,
            persistent: true,
        },
        whole_mr: false,
    };
    let sg8 = [x.sge(0, 8)?];
    x.qp.post_send(&[
        SendWr::new(3, persistent, &[]),
        SendWr::new(4, SendOp::Send, &sg8),
    ])
    .map_err(|(_, e)| e)?;
    expect(&x.cq, 3, WcStatus::RemAccessErr, None)?;
    expect(&x.cq, 4, WcStatus::WrFlushErr, None)?;
    let no_right = Opts {
        mr_access: flushable,
        ..OPTS
    };
    let (x, y) = pair(a, b, &no_right)?;
    let f = SendOp::Flush {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
        length: 64,
        flush: global,
        whole_mr: false,
    };
    let sg = [x.sge(0, 8)?];
    x.qp.post_send(&[SendWr::new(7, f, &[]), SendWr::new(8, SendOp::Send, &sg)])
        .map_err(|(_, e)| e)?;
    expect(&x.cq, 7, WcStatus::RemInvReqErr, None)?;
    expect(&x.cq, 8, WcStatus::WrFlushErr, None)?;
    Ok(())
}

/// The same data path over IPv6 addresses.
fn ipv6(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    for (i, op) in [Op::Send, Op::WriteImm, Op::Read].into_iter().enumerate() {
        transfer(&x, &y, op, 100_000 + i, 900 + i as u32)?;
    }
    Ok(())
}

/// The addresses of `rxa` and `rxb`, IPv4 and IPv6.
struct Ports {
    a: Port<'static>,
    b: Port<'static>,
    a6: Port<'static>,
    b6: Port<'static>,
}

const CASES: &[FnCase<Ports>] = &[
    case!("all_ops_veth", |p| all_ops(p.a, p.b, 1)),
    case!("all_ops_loopback", |p| all_ops(p.a, p.a, 2)),
    case!("atomics_veth", |p| atomics(p.a, p.b)),
    case!("atomics_loopback", |p| atomics(p.b, p.b)),
    case!("atomic_write_veth", |p| atomic_write(p.a, p.b)),
    case!("atomic_write_loopback", |p| atomic_write(p.b, p.b)),
    case!("uc_veth", |p| uc(p.a, p.b)),
    case!("uc_loopback", |p| uc(p.a, p.a)),
    case!("uc_resync", |p| uc_resync(p.a, p.b)),
    case!("uc_too_long", |p| uc_too_long(p.a, p.b)),
    case!("inline_unsignaled_zero_length", |p| {
        inline_unsignaled(p.a, p.b)
    }),
    case!("many_qps", |p| many_qps(p.a, p.b)),
    case!("access_errors", |p| access_errors(p.a, p.b)),
    case!("bad_recv_memory", |p| bad_recv_memory(p.a, p.b)),
    case!("write_imm_bad_rkey", |p| write_imm_bad_rkey(p.a, p.b)),
    case!("rnr_retry", |p| rnr(p.a, p.b)),
    case!("ack_timeout_retransmit", |p| timeouts(p.a, p.b)),
    case!("flush", |p| flush(p.a, p.b)),
    case!("flush_op_veth", |p| flush_ops(p.a, p.b)),
    case!("flush_op_loopback", |p| flush_ops(p.b, p.b)),
    case!("destroy_under_traffic", |p| destroy_under_traffic(p.a, p.b)),
    case!("ipv6", |p| ipv6(p.a6, p.b6)),
    case!("stale_keys_and_qpns", |p| stale_keys_and_qpns(p.a, p.b)),
    case!("memory_keys", |p| memory_keys(p.a, p.b)),
    case!("zero_length_without_key", |p| zero_length_without_key(
        p.a, p.b
    )),
    case!("srq_core_polled_cqs_and_drain", |p| srq_cqs_drain(p.a, p.b)),
    case!("windows_veth", |p| windows(p.a, p.b)),
    case!("windows_loopback", |p| windows(p.b, p.b)),
    case!(
        "send_inv_of_mr_with_window",
        |p| send_inv_of_mr_with_window(p.b, p.b)
    ),
    case!("local_and_read_invalidate", |p| local_and_read_invalidate(
        p.a, p.b
    )),
    case!("fast_reg_pages", |p| fast_reg_pages(p.a, p.b)),
    case!("local_pages", |p| local_pages(p.a, p.b)),
    case!("register_now", |p| register_now(p.a, p.b)),
];

struct RxeRcTest;

impl kernel::Module for RxeRcTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let (v4, v6) = (RxePair::ipv4(1), RxePair::ipv6(0x79));
        let mut ports = Ports {
            a: v4.a,
            b: v4.b,
            a6: v6.a,
            b6: v6.b,
        };
        ktap::run(CASES, &mut ports)?;
        Ok(RxeRcTest)
    }
}
