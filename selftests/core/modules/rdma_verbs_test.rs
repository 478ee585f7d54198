// SPDX-License-Identifier: GPL-2.0

//! Selftest of the verbs object model, run on the software devices of
//! `rdma_swdev` (`swdev0`, and `swinl0` whose provider completes inline).
//!
//! Object lifetimes and resource counts, the QP state machine through the
//! real `modify_qp`, data moved by every operation and checked byte for
//! byte, UD with GRH, access violations and flushes, fast registration,
//! SRQs, the CQ verbs and the completion machinery (poll contexts, `wr_cqe`
//! dispatch, moderation, one handler per CQ under a storm), drain, the
//! non-sleeping verbs from atomic contexts, the inline-completion catch,
//! and the teardown of objects a ULP leaked when their device goes away.

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use kernel::c_str;
use kernel::error::code::{EAGAIN, EBUSY, EINVAL, ENODEV, ENOMEM};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::workqueue;

use rdma::device::driver::Driver;
use rdma::device::event::{Element, Event, EventHandler, EventKind};
use rdma::device::port::PortAttr;
use rdma::device::{self, Device, DeviceAttr, DeviceDesc, DeviceOps, DeviceRef};
use rdma::kshim::mem::{Buffer, Sge};
use rdma::kshim::testing;
use rdma::kshim::time;
use rdma::spec::attr::{Gid, LinkLayer, Mtu, NodeType};
use rdma::spec::opcodes::{Access, NotifyFlags, SendFlags, WcFlags, WcOpcode, WcStatus};
use rdma::spec::qp_state::{optional_attrs, required_attrs, AttrMask, QpState, QpType};
use rdma::verbs::ah::{Ah, AhAttr, GlobalRoute};
use rdma::verbs::cq::{CompHandler, Cq, CqCore, PollCtx, ProviderCq};
use rdma::verbs::mr::{BufSlice, Mr, MrCore};
use rdma::verbs::mw::{Mw, MwType};
use rdma::verbs::pd::{Pd, PdFlags};
use rdma::verbs::qp::{ProviderQp, Qp, QpAttr, QpCap, QpInfo, QpInitAttr, QpOps};
use rdma::verbs::srq::tm::{OpsKind, OpsWr, TmCap, TmCaps, TM_CAP_RC};
use rdma::verbs::srq::{Srq, SrqAttr};
use rdma::verbs::wc::{CqeDone, Wc};
use rdma::verbs::wr::{FlushType, RecvWr, SendOp, SendWr, UdDest};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{Opts, Remote, ALL_ACCESS};

#[path = "../../lib/verify.rs"]
mod verify;
use verify::{wait_until, Rng};

module! {
    type: VerbsTest,
    name: "rdma_verbs_test",
    author: "rdma-rs developers",
    description: "Selftest: the verbs object model of rdma_core",
    license: "GPL",
}

/// How often the cases poll a condition they wait for (ms).
const POLL_MS: u32 = 2;

fn dev(name: &CStr) -> Result<DeviceRef> {
    device::get_by_name(name).ok_or(ENODEV)
}

/// Polls `n` completions (5 s at most).
fn poll_n(cq: &CqCore, n: usize) -> Result<KVec<Wc>> {
    let mut got = KVec::with_capacity(n, GFP_KERNEL)?;
    let mut batch: [Wc; 8] = Default::default();
    for _ in 0..2500 {
        while got.len() < n {
            let want = core::cmp::min(8, n - got.len());
            let k = cq.poll(&mut batch[..want]);
            if k == 0 {
                break;
            }
            for wc in batch.iter_mut().take(k) {
                got.push(core::mem::take(wc), GFP_KERNEL)?;
            }
        }
        if got.len() == n {
            return Ok(got);
        }
        time::msleep(2);
    }
    pr_err!("polled {} of {} completions\n", got.len(), n);
    Err(EAGAIN)
}

fn expect_wc(wc: &Wc, wr_id: u64, status: WcStatus, opcode: WcOpcode, len: Option<u32>) -> Result {
    let ok = wc.wr_id == wr_id
        && wc.status == status
        && (status != WcStatus::Success || wc.opcode == opcode)
        && len.map_or(true, |l| wc.byte_len == l);
    if !ok {
        pr_err!(
            "wc: wr_id {} status {:?} opcode {:?} len {}; want {} {:?} {:?} {:?}\n",
            wc.wr_id,
            wc.status,
            wc.opcode,
            wc.byte_len,
            wr_id,
            status,
            opcode,
            len
        );
    }
    check(ok, "completion as expected")
}

fn av() -> AhAttr {
    AhAttr {
        port_num: 1,
        grh: GlobalRoute {
            dgid: Gid::from_ipv4([10, 77, 5, 1]),
            sgid_index: 0,
            hop_limit: 64,
            ..GlobalRoute::default()
        },
        ..AhAttr::default()
    }
}

/// QPs of the software device: a valid value for every attribute
/// `modify_qp` takes.
const SWDEV: Opts = Opts {
    qkey: 0x1111_1111,
    max_rd_atomic: 4,
    min_rnr_timer: 12,
    timeout: 14,
    ..rc::RC
};

/// QP `remote` on the device's own port.
fn peer(remote: u32) -> Remote {
    Remote {
        qpn: remote,
        psn: 0,
        av: av(),
    }
}

/// Valid values for every attribute `modify_qp` takes.
fn full_attr(state: QpState, remote: u32) -> QpAttr {
    rc::qp_attr(&SWDEV, state, &peer(remote))
}

/// Moves a QP through RESET, INIT, RTR to RTS with the required attributes.
fn to_rts(qp: &Qp, remote: u32) -> Result {
    rc::modify_to(qp, &SWDEV, &peer(remote), QpState::Rts)
}

fn caps(wr: u32) -> QpCap {
    QpCap {
        max_send_wr: wr,
        max_recv_wr: wr,
        ..SWDEV.cap
    }
}

fn new_qp(pd: &Pd, cq: &Cq, t: QpType, wr: u32) -> Result<Qp> {
    let o = Opts {
        qp_type: t,
        cap: caps(wr),
        ..SWDEV
    };
    rc::create_qp(pd, cq, cq, &o)
}

/// A connected pair of QPs on one device sharing one CQ.
fn rc_pair(pd: &Pd, cq: &Cq, t: QpType, wr: u32) -> Result<(Qp, Qp)> {
    let a = new_qp(pd, cq, t, wr)?;
    let b = new_qp(pd, cq, t, wr)?;
    to_rts(&a, b.qpn())?;
    to_rts(&b, a.qpn())?;
    Ok((a, b))
}

fn post1(qp: &Qp, wr: SendWr<'_>) -> Result {
    qp.post_send(&[wr]).map_err(|(_, e)| e)
}

fn recv1(qp: &Qp, wr_id: u64, sg: &[Sge]) -> Result {
    qp.post_recv(&[RecvWr {
        wr_id,
        cqe: None,
        sg,
    }])
    .map_err(|(_, e)| e)
}

/// A deterministic byte pattern.
fn pattern(seed: u32, out: &mut [u8]) {
    Rng(seed | 1).fill(out);
}

fn resources_and_destroy_order() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let base = d.resource_counts();
    check(base == [0; 7], "no objects at start")?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 16, None)?;
    let buf = Buffer::new(4096)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, ALL_ACCESS)?;
    let srq = Srq::create(
        pd.core(),
        &SrqAttr {
            max_wr: 8,
            max_sge: 1,
            srq_limit: 0,
        },
    )?;
    let qp = Qp::create(
        pd.core(),
        &QpInitAttr {
            qp_type: QpType::Rc,
            send_cq: cq.core(),
            recv_cq: cq.core(),
            srq: Some(srq.core()),
            cap: QpCap {
                max_recv_wr: 0,
                ..caps(4)
            },
            sq_sig_all: false,
            port_num: 1,
        },
    )?;
    let ah = Ah::create(pd.core(), &av())?;
    check(d.resource_counts() == [1, 1, 1, 1, 1, 1, 0], "one of each")?;
    // Destroying what is used is refused, and the handle comes back.
    let pd = match pd.destroy() {
        Err((pd, e)) if e == EBUSY => pd,
        _ => return check(false, "PD in use: EBUSY"),
    };
    let cq = match cq.destroy() {
        Err((cq, e)) if e == EBUSY => cq,
        _ => return check(false, "CQ in use: EBUSY"),
    };
    let srq = match srq.destroy() {
        Err((s, e)) if e == EBUSY => s,
        _ => return check(false, "SRQ in use: EBUSY"),
    };
    check(qp.destroy().is_ok(), "QP destroyed")?;
    check(srq.destroy().is_ok(), "SRQ destroyed once unused")?;
    check(cq.destroy().is_ok(), "CQ destroyed once unused")?;
    check(ah.destroy().is_ok(), "AH destroyed")?;
    let pd = match pd.destroy() {
        Err((pd, e)) if e == EBUSY => pd,
        _ => return check(false, "PD with an MR: EBUSY"),
    };
    check(mr.dereg().is_ok(), "MR deregistered")?;
    check(pd.destroy().is_ok(), "PD destroyed last")?;
    check(d.resource_counts() == [0; 7], "all gone")?;
    // Dropping a handle of an object in use: the last user frees it.
    let pd = Pd::alloc(d.arc())?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 64, Access::LOCAL_WRITE)?;
    drop(pd);
    check(
        d.resource_counts()[0] == 1,
        "orphaned PD lives while its MR does",
    )?;
    drop(mr);
    check(
        d.resource_counts() == [0; 7],
        "orphaned PD freed with its last user",
    )?;
    // Bad arguments.
    check(
        Cq::create(d.arc(), 0, None).is_err(),
        "CQ of 0 entries refused",
    )?;
    check(
        Cq::create(d.arc(), 1 << 20, None).is_err(),
        "CQ above max_cqe refused",
    )?;
    let pd = Pd::alloc(d.arc())?;
    check(
        Mr::reg_buffer(pd.core(), &buf, 0, 64, Access::REMOTE_WRITE).is_err(),
        "remote write without local write refused",
    )?;
    check(
        Mr::reg_buffer(pd.core(), &buf, 4000, 200, Access::NONE).is_err(),
        "MR past the buffer refused",
    )?;
    let mut bad_av = av();
    bad_av.grh.sgid_index = 3;
    check(
        Ah::create(pd.core(), &bad_av).is_err(),
        "AH with an empty GID index refused",
    )?;
    bad_av = av();
    bad_av.port_num = 9;
    check(
        Ah::create(pd.core(), &bad_av).is_err(),
        "AH with a bad port refused",
    )?;
    Ok(())
}

/// Every transition from every reachable state, for RC, UC and UD, through
/// the real `modify_qp`; then missing, forbidden and bad values.
fn qp_state_machine() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 64, None)?;
    let path = [
        QpState::Reset,
        QpState::Init,
        QpState::Rtr,
        QpState::Rts,
        QpState::Sqd,
    ];
    let mut checked = 0u32;
    for t in [QpType::Rc, QpType::Uc, QpType::Ud] {
        for depth in 0..=path.len() {
            // depth == len: the error state, reached from INIT.
            for next in QpState::ALL {
                let qp = new_qp(&pd, &cq, t, 2)?;
                let cur = if depth == path.len() {
                    let m = required_attrs(QpState::Reset, QpState::Init, t).ok_or(EINVAL)?;
                    qp.modify(&full_attr(QpState::Init, 0), m | AttrMask::STATE)?;
                    qp.modify(&full_attr(QpState::Err, 0), AttrMask::STATE)?;
                    QpState::Err
                } else {
                    for w in path[..=depth].windows(2) {
                        let m = required_attrs(w[0], w[1], t).ok_or(EINVAL)?;
                        qp.modify(&full_attr(w[1], 0), m | AttrMask::STATE)?;
                    }
                    path[depth]
                };
                check(qp.state() == cur, "reached the starting state")?;
                let legal = required_attrs(cur, next, t);
                let mask = legal.unwrap_or(AttrMask::NONE) | AttrMask::STATE;
                let r = qp.modify(&full_attr(next, 0), mask);
                match legal {
                    Some(req) => {
                        if r.is_err() || qp.state() != next {
                            pr_err!("{:?}: {:?} -> {:?} refused\n", t, cur, next);
                            return Err(EINVAL);
                        }
                        let _ = req;
                    }
                    None => {
                        if r != Err(EINVAL) || qp.state() != cur {
                            pr_err!("{:?}: illegal {:?} -> {:?} accepted\n", t, cur, next);
                            return Err(EINVAL);
                        }
                    }
                }
                checked += 1;
                // A missing required attribute and a forbidden one.
                if let (Some(req), Some(opt)) = (legal, optional_attrs(cur, next, t)) {
                    let qp2 = new_qp(&pd, &cq, t, 2)?;
                    if cur == QpState::Reset && !req.is_empty() {
                        let lowest = AttrMask(req.0 & req.0.wrapping_neg());
                        let r = qp2.modify(
                            &full_attr(next, 0),
                            req.difference(lowest) | AttrMask::STATE,
                        );
                        check(
                            r == Err(EINVAL) && qp2.state() == cur,
                            "missing attribute refused",
                        )?;
                        let extra = [
                            AttrMask::SQ_PSN,
                            AttrMask::RQ_PSN,
                            AttrMask::QKEY,
                            AttrMask::AV,
                        ]
                        .into_iter()
                        .find(|b| !(req | opt).contains(*b));
                        if let Some(b) = extra {
                            let r = qp2.modify(&full_attr(next, 0), req | b | AttrMask::STATE);
                            check(r == Err(EINVAL), "forbidden attribute refused")?;
                        }
                    }
                }
            }
        }
    }
    check(checked == 3 * 6 * 7, "every pair tried")?;
    // Bad values on a legal transition.
    let qp = new_qp(&pd, &cq, QpType::Rc, 2)?;
    let init =
        required_attrs(QpState::Reset, QpState::Init, QpType::Rc).ok_or(EINVAL)? | AttrMask::STATE;
    let mut a = full_attr(QpState::Init, 0);
    a.port_num = 0;
    check(qp.modify(&a, init) == Err(EINVAL), "port 0 refused")?;
    a = full_attr(QpState::Init, 0);
    a.pkey_index = 2;
    check(
        qp.modify(&a, init) == Err(EINVAL),
        "P_Key index past the table refused",
    )?;
    a = full_attr(QpState::Init, 0);
    a.qp_access_flags = Access::MW_BIND;
    check(
        qp.modify(&a, init) == Err(EINVAL),
        "bad access flags refused",
    )?;
    qp.modify(&full_attr(QpState::Init, 0), init)?;
    let rtr =
        required_attrs(QpState::Init, QpState::Rtr, QpType::Rc).ok_or(EINVAL)? | AttrMask::STATE;
    a = full_attr(QpState::Rtr, 0);
    a.ah_attr.grh.sgid_index = 2;
    check(
        qp.modify(&a, rtr) == Err(EINVAL),
        "AV with an empty GID refused",
    )?;
    a = full_attr(QpState::Rtr, 0);
    a.max_dest_rd_atomic = 200;
    check(
        qp.modify(&a, rtr) == Err(EINVAL),
        "max_dest_rd_atomic past the device refused",
    )?;
    a = full_attr(QpState::Rtr, 0);
    a.dest_qp_num = 1 << 24;
    check(qp.modify(&a, rtr) == Err(EINVAL), "25-bit QPN refused")?;
    check(qp.state() == QpState::Init, "still INIT")?;
    qp.modify(&full_attr(QpState::Rtr, 0), rtr)?;
    let rts =
        required_attrs(QpState::Rtr, QpState::Rts, QpType::Rc).ok_or(EINVAL)? | AttrMask::STATE;
    a = full_attr(QpState::Rts, 0);
    a.retry_cnt = 8;
    check(qp.modify(&a, rts) == Err(EINVAL), "retry count 8 refused")?;
    let q = qp.query()?;
    check(
        q.qp_state == QpState::Rtr && q.path_mtu == Mtu::Mtu1024 && q.cap.max_send_wr == 2,
        "query",
    )?;
    // A GSI QP is one per device.
    let gsi = Qp::create(
        pd.core(),
        &QpInitAttr {
            qp_type: QpType::Gsi,
            send_cq: cq.core(),
            recv_cq: cq.core(),
            srq: None,
            cap: caps(2),
            sq_sig_all: false,
            port_num: 1,
        },
    )?;
    check(gsi.qpn() == 1, "GSI QP is QP1")?;
    let second = Qp::create(
        pd.core(),
        &QpInitAttr {
            qp_type: QpType::Gsi,
            send_cq: cq.core(),
            recv_cq: cq.core(),
            srq: None,
            cap: caps(2),
            sq_sig_all: false,
            port_num: 1,
        },
    );
    check(second.err() == Some(EBUSY), "second GSI QP refused")?;
    Ok(())
}

/// SEND, SEND with immediate, WRITE, WRITE with immediate and READ with
/// sizes from 0 to 1 MiB, unaligned multi-SGE lists, checked byte for byte;
/// then both atomics.
fn rc_data_integrity() -> Result {
    const MAX: usize = 1 << 20;
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 256, None)?;
    let (a, b) = rc_pair(&pd, &cq, QpType::Rc, 16)?;
    let src = Buffer::new(MAX + 64)?;
    let dst = Buffer::new(MAX + 64)?;
    let smr = Mr::reg_buffer(pd.core(), &src, 0, MAX + 64, ALL_ACCESS)?;
    let dmr = Mr::reg_buffer(pd.core(), &dst, 0, MAX + 64, ALL_ACCESS)?;
    let mut want = KVVec::from_elem(0u8, MAX, GFP_KERNEL)?;
    let mut got = KVVec::from_elem(0u8, MAX, GFP_KERNEL)?;
    let sizes: [usize; 10] = [0, 1, 7, 4095, 4096, 4097, 12345, 65536, 262_147, MAX];
    let mut id = 0u64;
    for (i, &len) in sizes.iter().enumerate() {
        pattern(i as u32 + 1, &mut want[..len]);
        src.write(5, &want[..len])?;
        // Three unaligned pieces on the sending side, two on the receiving.
        let (s1, s2) = (len / 3, len / 3 + len / 5);
        let ssg = [
            src.sge(5, s1 as u32, smr.lkey())?,
            src.sge(5 + s1, (s2 - s1) as u32, smr.lkey())?,
            src.sge(5 + s2, (len - s2) as u32, smr.lkey())?,
        ];
        let r1 = len / 2;
        let rsg = [
            dst.sge(3, r1 as u32, dmr.lkey())?,
            dst.sge(3 + r1, (len - r1 + 16) as u32, dmr.lkey())?,
        ];
        for op in 0..5 {
            dst.fill(0, MAX + 64, 0xee)?;
            id += 1;
            let imm = 0x1234_0000 + id as u32;
            let raddr = dst.addr(3);
            let sop = match op {
                0 => SendOp::Send,
                1 => SendOp::SendWithImm(imm),
                2 => SendOp::Write {
                    remote_addr: raddr,
                    rkey: dmr.rkey(),
                },
                3 => SendOp::WriteWithImm {
                    remote_addr: raddr,
                    rkey: dmr.rkey(),
                    imm,
                },
                _ => SendOp::Read {
                    remote_addr: raddr,
                    rkey: dmr.rkey(),
                },
            };
            let consumes = op < 2 || op == 3;
            if consumes {
                recv1(&b, id, if op == 3 { &[] } else { &rsg })?;
            }
            if op == 4 {
                // READ: the data starts at the remote side.
                dst.write(3, &want[..len])?;
                src.fill(0, MAX + 64, 0)?;
            }
            post1(&a, SendWr::new(id, sop, &ssg))?;
            let wcs = poll_n(&cq, if consumes { 2 } else { 1 })?;
            let (sw, rw) = if consumes {
                if wcs[0].qp_num == a.qpn() {
                    (&wcs[0], Some(&wcs[1]))
                } else {
                    (&wcs[1], Some(&wcs[0]))
                }
            } else {
                (&wcs[0], None)
            };
            let sop_wc = [
                WcOpcode::Send,
                WcOpcode::Send,
                WcOpcode::RdmaWrite,
                WcOpcode::RdmaWrite,
                WcOpcode::RdmaRead,
            ][op];
            expect_wc(sw, id, WcStatus::Success, sop_wc, Some(len as u32))?;
            if let Some(rw) = rw {
                let ropc = if op == 3 {
                    WcOpcode::RecvRdmaWithImm
                } else {
                    WcOpcode::Recv
                };
                expect_wc(rw, id, WcStatus::Success, ropc, Some(len as u32))?;
                let has_imm = rw.wc_flags.contains(WcFlags::WITH_IMM);
                check(has_imm == (op == 1 || op == 3), "immediate flag")?;
                check(!has_imm || rw.imm_data == imm, "immediate data")?;
                check(rw.qp_num == b.qpn(), "receive on the peer")?;
            }
            if op == 4 {
                src.read(5, &mut got[..len])?;
            } else {
                dst.read(3, &mut got[..len])?;
                let mut edge = [0u8; 1];
                dst.read(3 + len, &mut edge)?;
                check(edge[0] == 0xee, "nothing written past the message")?;
            }
            if got[..len] != want[..len] {
                pr_err!("op {} len {}: data differs\n", op, len);
                return Err(EINVAL);
            }
        }
    }
    // Atomics on an aligned word of the destination.
    dst.write(64, &100u64.to_ne_bytes())?;
    let res = [src.sge(0, 8, smr.lkey())?];
    let word = dst.addr(64);
    let mut v = [0u8; 8];
    post1(
        &a,
        SendWr::new(
            900,
            SendOp::FetchAndAdd {
                remote_addr: word,
                rkey: dmr.rkey(),
                add: 5,
            },
            &res,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        900,
        WcStatus::Success,
        WcOpcode::FetchAdd,
        Some(8),
    )?;
    src.read(0, &mut v)?;
    check(
        u64::from_ne_bytes(v) == 100,
        "fetch-add returns the old value",
    )?;
    dst.read(64, &mut v)?;
    check(u64::from_ne_bytes(v) == 105, "fetch-add adds")?;
    post1(
        &a,
        SendWr::new(
            901,
            SendOp::CmpAndSwp {
                remote_addr: word,
                rkey: dmr.rkey(),
                compare: 105,
                swap: 7,
            },
            &res,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        901,
        WcStatus::Success,
        WcOpcode::CompSwap,
        Some(8),
    )?;
    dst.read(64, &mut v)?;
    check(
        u64::from_ne_bytes(v) == 7,
        "compare-and-swap swaps on equal",
    )?;
    post1(
        &a,
        SendWr::new(
            902,
            SendOp::CmpAndSwp {
                remote_addr: word,
                rkey: dmr.rkey(),
                compare: 105,
                swap: 9,
            },
            &res,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        902,
        WcStatus::Success,
        WcOpcode::CompSwap,
        Some(8),
    )?;
    dst.read(64, &mut v)?;
    check(
        u64::from_ne_bytes(v) == 7,
        "compare-and-swap keeps on different",
    )?;
    check(
        a.post_send(&[SendWr::new(
            903,
            SendOp::FetchAndAdd {
                remote_addr: word + 4,
                rkey: dmr.rkey(),
                add: 1,
            },
            &res,
        )])
        .is_err(),
        "unaligned atomic refused at post",
    )?;
    // Unsignaled requests complete silently; inline data needs no key.
    want[..100].copy_from_slice(&[0x5a; 100]);
    src.write(0, &want[..100])?;
    recv1(&b, 950, &[dst.sge(0, 200, dmr.lkey())?])?;
    let inline_sg = [Sge {
        addr: src.addr(0),
        length: 100,
        lkey: smr.lkey(),
    }];
    let mut wr = SendWr::new(951, SendOp::Send, &inline_sg);
    wr.flags = SendFlags::INLINE;
    post1(&a, wr)?;
    let wcs = poll_n(&cq, 1)?;
    expect_wc(&wcs[0], 950, WcStatus::Success, WcOpcode::Recv, Some(100))?;
    check(cq.peek(4) == 0, "no completion for the unsignaled send")?;
    dst.read(0, &mut got[..100])?;
    check(got[..100] == want[..100], "inline data arrived")?;
    drop((a, b));
    Ok(())
}

fn ud_with_grh() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 16, None)?;
    let a = new_qp(&pd, &cq, QpType::Ud, 4)?;
    let b = new_qp(&pd, &cq, QpType::Ud, 4)?;
    to_rts(&a, 0)?;
    to_rts(&b, 0)?;
    let buf = Buffer::new(8192)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 8192, ALL_ACCESS)?;
    let mut msg = [0u8; 100];
    pattern(7, &mut msg);
    buf.write(0, &msg)?;
    recv1(&b, 1, &[buf.sge(4096, 2048, mr.lkey())?])?;
    let ah = Ah::create(pd.core(), &av())?;
    let sg = [buf.sge(0, 100, mr.lkey())?];
    let mut wr = SendWr::new(2, SendOp::SendWithImm(77), &sg);
    wr.ud = Some(UdDest {
        ah: ah.core(),
        remote_qpn: b.qpn(),
        remote_qkey: 0x1111_1111,
    });
    post1(&a, wr)?;
    let wcs = poll_n(&cq, 2)?;
    let rw = if wcs[0].wr_id == 1 { &wcs[0] } else { &wcs[1] };
    expect_wc(rw, 1, WcStatus::Success, WcOpcode::Recv, Some(140))?;
    check(
        rw.wc_flags.contains(WcFlags::GRH) && rw.src_qp == a.qpn(),
        "GRH and source QP",
    )?;
    check(
        rw.network_hdr_type == 2 && rw.imm_data == 77,
        "IPv4 header type and immediate",
    )?;
    let mut got = [0u8; 100];
    buf.read(4096 + 40, &mut got)?;
    check(got == msg, "UD data after the GRH")?;
    let mut grh = [0u8; 40];
    buf.read(4096, &mut grh)?;
    let reply = AhAttr::from_wc(&d, 1, rw, &grh)?;
    check(
        reply.grh.dgid == Gid::from_ipv4([10, 77, 5, 1]) && reply.grh.sgid_index == 0,
        "AH from the completion",
    )?;
    let ah2 = Ah::create(pd.core(), &reply)?;
    check(ah2.query() == reply, "query returns the address")?;
    let mut changed = reply;
    changed.sl = 3;
    ah2.modify(&changed)?;
    check(ah2.query().sl == 3, "modify changes the address")?;
    // A wrong Q_Key loses the message; the sender still succeeds.
    recv1(&b, 3, &[buf.sge(4096, 2048, mr.lkey())?])?;
    let mut wr = SendWr::new(4, SendOp::Send, &sg);
    wr.ud = Some(UdDest {
        ah: ah.core(),
        remote_qpn: b.qpn(),
        remote_qkey: 5,
    });
    post1(&a, wr)?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        4,
        WcStatus::Success,
        WcOpcode::Send,
        None,
    )?;
    check(cq.peek(1) == 0, "nothing received with a wrong Q_Key")?;
    // UD needs an address; RDMA is not for UD.
    check(
        post1(&a, SendWr::new(5, SendOp::Send, &sg)) == Err(EINVAL),
        "UD send without AH refused",
    )?;
    check(
        post1(
            &a,
            SendWr::new(
                6,
                SendOp::Write {
                    remote_addr: 0,
                    rkey: 0,
                },
                &sg,
            ),
        ) == Err(EINVAL),
        "WRITE on UD refused",
    )?;
    // Multicast groups.
    let mut mgid = Gid::default();
    mgid.0[0] = 0xff;
    mgid.0[15] = 1;
    a.attach_mcast(&mgid)?;
    check(a.in_mcast(&mgid), "attached")?;
    check(
        a.attach_mcast(&Gid::from_ipv4([1, 2, 3, 4])) == Err(EINVAL),
        "unicast GID refused",
    )?;
    a.detach_mcast(&mgid)?;
    check(
        a.detach_mcast(&mgid) == Err(EINVAL),
        "detach when not attached refused",
    )?;
    Ok(())
}

fn access_violations_and_flush() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 64, None)?;
    let buf = Buffer::new(8192)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, ALL_ACCESS)?;
    let ro = Mr::reg_buffer(pd.core(), &buf, 4096, 4096, Access::REMOTE_READ)?;
    let sg = [buf.sge(0, 64, mr.lkey())?];
    let cases: [(SendOp<'_>, WcStatus); 4] = [
        (
            SendOp::Write {
                remote_addr: buf.addr(0),
                rkey: mr.rkey() ^ 0x100,
            },
            WcStatus::RemAccessErr,
        ),
        (
            SendOp::Write {
                remote_addr: buf.addr(4096),
                rkey: ro.rkey(),
            },
            WcStatus::RemAccessErr,
        ),
        (
            SendOp::Read {
                remote_addr: buf.addr(4090),
                rkey: mr.rkey(),
            },
            WcStatus::RemAccessErr,
        ),
        (SendOp::Send, WcStatus::RnrRetryExcErr),
    ];
    for (op, status) in cases {
        let (a, b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
        // Two more behind the failing one, and a receive on each side.
        recv1(&a, 10, &sg)?;
        a.post_send(&[
            SendWr::new(1, op, &sg),
            SendWr::new(2, SendOp::Send, &sg),
            SendWr::new(3, SendOp::Send, &sg),
        ])
        .map_err(|(_, e)| e)?;
        let wcs = poll_n(&cq, 4)?;
        let by_id = |id: u64| wcs.iter().find(|w| w.wr_id == id);
        expect_wc(by_id(1).ok_or(EINVAL)?, 1, status, WcOpcode::Send, None)?;
        expect_wc(
            by_id(2).ok_or(EINVAL)?,
            2,
            WcStatus::WrFlushErr,
            WcOpcode::Send,
            None,
        )?;
        expect_wc(
            by_id(3).ok_or(EINVAL)?,
            3,
            WcStatus::WrFlushErr,
            WcOpcode::Send,
            None,
        )?;
        expect_wc(
            by_id(10).ok_or(EINVAL)?,
            10,
            WcStatus::WrFlushErr,
            WcOpcode::Recv,
            None,
        )?;
        check(a.state() == QpState::Err, "requester in ERR")?;
        if status == WcStatus::RemAccessErr {
            check(b.state() == QpState::Err, "responder in ERR")?;
        }
        // Posting in ERR completes at once with a flush.
        post1(&a, SendWr::new(4, SendOp::Send, &sg))?;
        expect_wc(
            &poll_n(&cq, 1)?[0],
            4,
            WcStatus::WrFlushErr,
            WcOpcode::Send,
            None,
        )?;
    }
    // A bad local key.
    let (a, _b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    let bad = [Sge {
        addr: buf.addr(0),
        length: 64,
        lkey: 0x7f00,
    }];
    post1(
        &a,
        SendWr::new(
            20,
            SendOp::Write {
                remote_addr: buf.addr(0),
                rkey: mr.rkey(),
            },
            &bad,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        20,
        WcStatus::LocProtErr,
        WcOpcode::RdmaWrite,
        None,
    )?;
    // Posting before RTS is refused; too many SGEs too.
    let c = new_qp(&pd, &cq, QpType::Rc, 2)?;
    check(
        post1(&c, SendWr::new(30, SendOp::Send, &sg)) == Err(EINVAL),
        "post in RESET refused",
    )?;
    check(
        recv1(&c, 31, &sg) == Err(EINVAL),
        "receive in RESET refused",
    )?;
    let (e, _f) = rc_pair(&pd, &cq, QpType::Rc, 2)?;
    let five = [sg[0]; 5];
    check(
        post1(&e, SendWr::new(32, SendOp::Send, &five)) == Err(EINVAL),
        "5 SGEs over max 4 refused",
    )?;
    // A full send queue.
    let mut wr = SendWr::new(
        33,
        SendOp::Write {
            remote_addr: buf.addr(0),
            rkey: mr.rkey(),
        },
        &sg,
    );
    wr.flags = SendFlags::NONE;
    let r = e.post_send(&[
        SendWr::new(
            34,
            SendOp::Write {
                remote_addr: buf.addr(0),
                rkey: mr.rkey(),
            },
            &sg,
        ),
        SendWr::new(
            35,
            SendOp::Write {
                remote_addr: buf.addr(0),
                rkey: mr.rkey(),
            },
            &sg,
        ),
        wr,
    ]);
    check(
        matches!(r, Err((2, _))) || r.is_ok(),
        "full queue refuses at the right index",
    )?;
    let _ = poll_n(&cq, 2);
    Ok(())
}

fn fast_reg_and_invalidate() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 16, None)?;
    let (a, _b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    let p1 = Buffer::new(8192)?;
    let p2 = Buffer::new(8192)?;
    let src = Buffer::new(4096)?;
    let smr = Mr::reg_buffer(pd.core(), &src, 0, 4096, ALL_ACCESS)?;
    let fr = Mr::alloc_fast_reg(pd.core(), 4)?;
    check(!fr.is_valid(), "a new fast-reg MR is invalid")?;
    let n = fr.map_mr_sg(
        &[
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
        ],
        4096,
    )?;
    check(n == 2 && fr.length() == 16384, "two pages mapped")?;
    let key = (fr.lkey() & !0xff) | 0x42;
    post1(
        &a,
        SendWr::new(
            1,
            SendOp::RegMr {
                mr: fr.core(),
                key,
                access: Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            },
            &[],
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        1,
        WcStatus::Success,
        WcOpcode::RegMr,
        None,
    )?;
    check(fr.is_valid() && fr.rkey() == key, "valid under the new key")?;
    // A WRITE across the boundary of the two buffers.
    let mut msg = [0u8; 400];
    pattern(3, &mut msg);
    src.write(0, &msg)?;
    let sg = [src.sge(0, 400, smr.lkey())?];
    post1(
        &a,
        SendWr::new(
            2,
            SendOp::Write {
                remote_addr: fr.iova() + 8000,
                rkey: key,
            },
            &sg,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        2,
        WcStatus::Success,
        WcOpcode::RdmaWrite,
        Some(400),
    )?;
    let mut got = [0u8; 400];
    p1.read(8000, &mut got[..192])?;
    p2.read(0, &mut got[192..])?;
    check(got == msg, "data split over the two buffers")?;
    // The old key is stale; after LOCAL_INV the new one is too.
    post1(&a, SendWr::new(3, SendOp::LocalInv(key), &[]))?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        3,
        WcStatus::Success,
        WcOpcode::LocalInv,
        None,
    )?;
    check(!fr.is_valid(), "invalid after LOCAL_INV")?;
    post1(
        &a,
        SendWr::new(
            4,
            SendOp::Write {
                remote_addr: fr.iova(),
                rkey: key,
            },
            &sg,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        4,
        WcStatus::RemAccessErr,
        WcOpcode::RdmaWrite,
        None,
    )?;
    check(
        Mr::alloc_fast_reg(pd.core(), 65).is_err(),
        "page list over the device limit refused",
    )?;
    Ok(())
}

fn memory_windows() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 32, None)?;
    let buf = Buffer::new(8192)?;
    let mr = Mr::reg_buffer(
        pd.core(),
        &buf,
        0,
        4096,
        Access(ALL_ACCESS.0 | Access::MW_BIND.0),
    )?;
    let plain = Mr::reg_buffer(pd.core(), &buf, 4096, 4096, ALL_ACCESS)?;
    let src = Buffer::new(4096)?;
    let smr = Mr::reg_buffer(pd.core(), &src, 0, 4096, ALL_ACCESS)?;
    let mut msg = [0u8; 100];
    pattern(11, &mut msg);
    src.write(0, &msg)?;
    let sg = [src.sge(0, 100, smr.lkey())?];
    let w2 = Mw::alloc(pd.core(), MwType::Type2)?;
    let w1 = Mw::alloc(pd.core(), MwType::Type1)?;
    check(d.resource_counts()[6] == 2, "two windows counted")?;
    let (a, b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    let base = buf.addr(1024);
    let key2 = (w2.rkey() & !0xff) | 0x11;
    fn bind<'a>(mw: &'a Mw, key: u32, access: Access, mr: &'a Mr, addr: u64) -> SendOp<'a> {
        SendOp::BindMw {
            mw: mw.core(),
            mr: mr.core(),
            key,
            addr,
            length: 512,
            access,
        }
    }
    // A type 2 window is bound by (and for) the responder's QP.
    post1(
        &b,
        SendWr::new(1, bind(&w2, key2, Access::REMOTE_WRITE, &mr, base), &[]),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        1,
        WcStatus::Success,
        WcOpcode::BindMw,
        None,
    )?;
    check(
        w2.is_bound() && w2.rkey() == key2,
        "bound under the new key",
    )?;
    post1(
        &a,
        SendWr::new(
            2,
            SendOp::Write {
                remote_addr: base + 10,
                rkey: key2,
            },
            &sg,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        2,
        WcStatus::Success,
        WcOpcode::RdmaWrite,
        Some(100),
    )?;
    let mut got = [0u8; 100];
    buf.read(1034, &mut got)?;
    check(got == msg, "written through the window")?;
    post1(
        &b,
        SendWr::new(3, bind(&w2, key2 + 1, Access::REMOTE_WRITE, &mr, base), &[]),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        3,
        WcStatus::MwBindErr,
        WcOpcode::BindMw,
        None,
    )?;
    // Outside the window, and a right the window lacks.
    for (op, what) in [
        (
            SendOp::Write {
                remote_addr: base + 450,
                rkey: key2,
            },
            "past the window",
        ),
        (
            SendOp::Read {
                remote_addr: base,
                rkey: key2,
            },
            "read through a write-only window",
        ),
    ] {
        let (c, e) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
        // Type 2 windows answer only their own QP: bind a fresh one for `e`.
        let w = Mw::alloc(pd.core(), MwType::Type2)?;
        let k = (w.rkey() & !0xff) | 0x22;
        post1(
            &e,
            SendWr::new(4, bind(&w, k, Access::REMOTE_WRITE, &mr, base), &[]),
        )?;
        expect_wc(
            &poll_n(&cq, 1)?[0],
            4,
            WcStatus::Success,
            WcOpcode::BindMw,
            None,
        )?;
        let op = match op {
            SendOp::Write { remote_addr, .. } => SendOp::Write {
                remote_addr,
                rkey: k,
            },
            SendOp::Read { remote_addr, .. } => SendOp::Read {
                remote_addr,
                rkey: k,
            },
            other => other,
        };
        post1(&c, SendWr::new(5, op, &sg))?;
        let wc = &poll_n(&cq, 1)?[0];
        if wc.status != WcStatus::RemAccessErr {
            pr_err!("{}: status {:?}\n", what, wc.status);
            return Err(EINVAL);
        }
    }
    // Another QP of the PD cannot use a type 2 window bound to `b`.
    let (c, _e) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    post1(
        &c,
        SendWr::new(
            6,
            SendOp::Write {
                remote_addr: base,
                rkey: key2,
            },
            &sg,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        6,
        WcStatus::RemAccessErr,
        WcOpcode::RdmaWrite,
        None,
    )?;
    // Invalidated, the window refuses access; then it can be bound again.
    let (a, b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    let w = Mw::alloc(pd.core(), MwType::Type2)?;
    let k = (w.rkey() & !0xff) | 0x33;
    post1(
        &b,
        SendWr::new(7, bind(&w, k, Access::REMOTE_WRITE, &mr, base), &[]),
    )?;
    post1(&b, SendWr::new(8, SendOp::LocalInv(k), &[]))?;
    let wcs = poll_n(&cq, 2)?;
    check(
        wcs.iter().all(|w| w.status == WcStatus::Success),
        "bind and invalidate",
    )?;
    check(!w.is_bound(), "invalidated")?;
    post1(
        &a,
        SendWr::new(
            9,
            SendOp::Write {
                remote_addr: base,
                rkey: k,
            },
            &sg,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        9,
        WcStatus::RemAccessErr,
        WcOpcode::RdmaWrite,
        None,
    )?;
    // A type 1 window serves any QP of its PD; binding needs MW_BIND on the MR.
    let (a, b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    let k1 = (w1.rkey() & !0xff) | 0x44;
    post1(
        &a,
        SendWr::new(10, bind(&w1, k1, Access::REMOTE_READ, &plain, base), &[]),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        10,
        WcStatus::MwBindErr,
        WcOpcode::BindMw,
        None,
    )?;
    post1(
        &b,
        SendWr::new(11, bind(&w1, k1, Access::REMOTE_READ, &mr, base), &[]),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        11,
        WcStatus::Success,
        WcOpcode::BindMw,
        None,
    )?;
    let (c, _e) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    let rsg = [src.sge(200, 100, smr.lkey())?];
    post1(
        &c,
        SendWr::new(
            12,
            SendOp::Read {
                remote_addr: base + 10,
                rkey: k1,
            },
            &rsg,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        12,
        WcStatus::Success,
        WcOpcode::RdmaRead,
        Some(100),
    )?;
    src.read(200, &mut got)?;
    check(got == msg, "read through a type 1 window from another QP")?;
    drop((a, b, c, w, w1, w2));
    check(d.resource_counts()[6] == 0, "windows deallocated")
}

/// A type 2 window belongs to the QP object, not to its number: once the
/// QP is destroyed the window is unbound, and a QP of another PD that gets
/// the same number back (swdev0 reuses numbers after 64 QPs) cannot write
/// through the old key.
fn window_outlives_qp() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let pd2 = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 32, None)?;
    let buf = Buffer::new(4096)?;
    let mr = Mr::reg_buffer(
        pd.core(),
        &buf,
        0,
        4096,
        Access(ALL_ACCESS.0 | Access::MW_BIND.0),
    )?;
    let src = Buffer::new(4096)?;
    let smr = Mr::reg_buffer(pd2.core(), &src, 0, 4096, ALL_ACCESS)?;
    let sg = [src.sge(0, 64, smr.lkey())?];
    let w = Mw::alloc(pd.core(), MwType::Type2)?;
    let key = (w.rkey() & !0xff) | 0x5a;
    let (a, b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    post1(
        &b,
        SendWr::new(
            1,
            SendOp::BindMw {
                mw: w.core(),
                mr: mr.core(),
                key,
                addr: buf.addr(0),
                length: 4096,
                access: Access::REMOTE_WRITE,
            },
            &[],
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        1,
        WcStatus::Success,
        WcOpcode::BindMw,
        None,
    )?;
    let qpn = b.qpn();
    drop((a, b));
    // Create QPs of the other PD until the number comes back.
    let mut reused = None;
    for _ in 0..256 {
        let q = new_qp(&pd2, &cq, QpType::Rc, 8)?;
        if q.qpn() == qpn {
            reused = Some(q);
            break;
        }
    }
    let Some(q) = reused else {
        pr_err!("QP number {} never came back\n", qpn);
        return Err(EINVAL);
    };
    let c = new_qp(&pd2, &cq, QpType::Rc, 8)?;
    to_rts(&q, c.qpn())?;
    to_rts(&c, q.qpn())?;
    post1(
        &c,
        SendWr::new(
            2,
            SendOp::Write {
                remote_addr: buf.addr(0),
                rkey: key,
            },
            &sg,
        ),
    )?;
    let wc = &poll_n(&cq, 1)?[0];
    if wc.status != WcStatus::RemAccessErr {
        pr_err!("write through a dead QP's window: {:?}\n", wc.status);
        return Err(EINVAL);
    }
    let mut got = [0u8; 64];
    buf.read(0, &mut got)?;
    check(got == [0u8; 64], "nothing written through the old window")?;
    check(!w.is_bound(), "the window went with its QP")?;
    drop((q, c, w, mr, smr));
    Ok(())
}

/// An MR with windows bound to it can be neither deregistered (`EINVAL`,
/// the handle back) nor invalidated (`LOCAL_INV` completes with
/// `LocQpOpErr`) until the windows go, as in the C rxe. A handle dropped
/// meanwhile deregisters anyway: the windows refuse access.
fn mr_with_windows() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 32, None)?;
    let buf = Buffer::new(8192)?;
    let rights = Access(ALL_ACCESS.0 | Access::MW_BIND.0);
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, rights)?;
    let src = Buffer::new(4096)?;
    let smr = Mr::reg_buffer(pd.core(), &src, 0, 4096, ALL_ACCESS)?;
    let sg = [src.sge(0, 64, smr.lkey())?];
    let (a, b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    let w = Mw::alloc(pd.core(), MwType::Type2)?;
    let wkey = (w.rkey() & !0xff) | 0x61;
    fn bind<'a>(mw: &'a Mw, key: u32, mr: &'a Arc<MrCore>, addr: u64) -> SendOp<'a> {
        SendOp::BindMw {
            mw: mw.core(),
            mr,
            key,
            addr,
            length: 512,
            access: Access::REMOTE_WRITE,
        }
    }
    post1(
        &b,
        SendWr::new(1, bind(&w, wkey, mr.core(), buf.addr(0)), &[]),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        1,
        WcStatus::Success,
        WcOpcode::BindMw,
        None,
    )?;
    let mr = match mr.destroy() {
        Err((mr, e)) if e == EINVAL => mr,
        Err((_, e)) => return Err(e),
        Ok(()) => {
            pr_err!("an MR with a window bound was deregistered\n");
            return Err(EINVAL);
        }
    };
    // A fast-registration MR with a type 1 window: LOCAL_INV refused.
    let fr = Mr::alloc_fast_reg(pd.core(), 4)?;
    fr.map_mr_sg(
        &[BufSlice {
            buf: &buf,
            offset: 4096,
            len: 4096,
        }],
        4096,
    )?;
    let fkey = (fr.lkey() & !0xff) | 0x62;
    post1(
        &b,
        SendWr::new(
            2,
            SendOp::RegMr {
                mr: fr.core(),
                key: fkey,
                access: Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::MW_BIND,
            },
            &[],
        ),
    )?;
    let w1 = Mw::alloc(pd.core(), MwType::Type1)?;
    let k1 = (w1.rkey() & !0xff) | 0x63;
    post1(
        &b,
        SendWr::new(3, bind(&w1, k1, fr.core(), buf.addr(4096)), &[]),
    )?;
    let wcs = poll_n(&cq, 2)?;
    check(
        wcs.iter().all(|w| w.status == WcStatus::Success),
        "fast registration and bind",
    )?;
    // On another QP: a failed local operation takes its QP down.
    let (c, _e) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    post1(&c, SendWr::new(4, SendOp::LocalInv(fkey), &[]))?;
    let wc = &poll_n(&cq, 1)?[0];
    if wc.status != WcStatus::LocQpOpErr {
        pr_err!("LOCAL_INV of an MR with a window: {:?}\n", wc.status);
        return Err(EINVAL);
    }
    check(fr.is_valid(), "still valid after the refused LOCAL_INV")?;
    // Once the windows go, both work.
    post1(&b, SendWr::new(5, SendOp::LocalInv(wkey), &[]))?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        5,
        WcStatus::Success,
        WcOpcode::LocalInv,
        None,
    )?;
    check(mr.destroy().is_ok(), "deregistered once its window went")?;
    drop(w1);
    post1(&b, SendWr::new(6, SendOp::LocalInv(fkey), &[]))?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        6,
        WcStatus::Success,
        WcOpcode::LocalInv,
        None,
    )?;
    // Dropping the handle of an MR with a window deregisters it: the
    // window stays bound but refuses access.
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, rights)?;
    let w = Mw::alloc(pd.core(), MwType::Type1)?;
    let k = (w.rkey() & !0xff) | 0x64;
    post1(&b, SendWr::new(7, bind(&w, k, mr.core(), buf.addr(0)), &[]))?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        7,
        WcStatus::Success,
        WcOpcode::BindMw,
        None,
    )?;
    drop(mr);
    check(d.resource_counts()[4] == 2, "the dropped MR is gone")?;
    post1(
        &a,
        SendWr::new(
            8,
            SendOp::Write {
                remote_addr: buf.addr(0),
                rkey: k,
            },
            &sg,
        ),
    )?;
    let wc = &poll_n(&cq, 1)?[0];
    check(
        wc.status == WcStatus::RemAccessErr,
        "no access through a dropped MR's window",
    )?;
    drop((w, fr, smr));
    Ok(())
}

/// READ with invalidate, FLUSH and ATOMIC_WRITE, and what UC refuses.
fn extended_opcodes() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 32, None)?;
    let (a, _b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    let buf = Buffer::new(8192)?;
    let flushable = Access(ALL_ACCESS.0 | Access::FLUSH_GLOBAL.0);
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, flushable)?;
    let plain = Mr::reg_buffer(pd.core(), &buf, 4096, 4096, ALL_ACCESS)?;
    // ATOMIC_WRITE: 8 bytes from the SGE land at once.
    buf.write(0, &0xdead_beef_cafe_f00du64.to_ne_bytes())?;
    let eight = [buf.sge(0, 8, mr.lkey())?];
    post1(
        &a,
        SendWr::new(
            1,
            SendOp::AtomicWrite {
                remote_addr: buf.addr(512),
                rkey: mr.rkey(),
            },
            &eight,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        1,
        WcStatus::Success,
        WcOpcode::AtomicWrite,
        Some(8),
    )?;
    let mut v = [0u8; 8];
    buf.read(512, &mut v)?;
    check(
        u64::from_ne_bytes(v) == 0xdead_beef_cafe_f00d,
        "atomic write stored",
    )?;
    let seven = [buf.sge(0, 7, mr.lkey())?];
    check(
        post1(
            &a,
            SendWr::new(
                2,
                SendOp::AtomicWrite {
                    remote_addr: buf.addr(512),
                    rkey: mr.rkey(),
                },
                &seven,
            ),
        ) == Err(EINVAL),
        "atomic write of 7 bytes refused",
    )?;
    check(
        post1(
            &a,
            SendWr::new(
                3,
                SendOp::AtomicWrite {
                    remote_addr: buf.addr(513),
                    rkey: mr.rkey(),
                },
                &eight,
            ),
        ) == Err(EINVAL),
        "unaligned atomic write refused",
    )?;
    // FLUSH needs the MR's flush right.
    let global = FlushType {
        global: true,
        persistent: false,
    };
    post1(
        &a,
        SendWr::new(
            4,
            SendOp::Flush {
                remote_addr: buf.addr(0),
                rkey: mr.rkey(),
                length: 4096,
                flush: global,
                whole_mr: false,
            },
            &[],
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        4,
        WcStatus::Success,
        WcOpcode::Flush,
        None,
    )?;
    check(
        post1(
            &a,
            SendWr::new(
                5,
                SendOp::Flush {
                    remote_addr: buf.addr(0),
                    rkey: mr.rkey(),
                    length: 8,
                    flush: FlushType::default(),
                    whole_mr: false,
                },
                &[],
            ),
        ) == Err(EINVAL),
        "flush of no kind refused",
    )?;
    post1(
        &a,
        SendWr::new(
            6,
            SendOp::Flush {
                remote_addr: buf.addr(4096),
                rkey: plain.rkey(),
                length: 64,
                flush: global,
                whole_mr: false,
            },
            &[],
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        6,
        WcStatus::RemAccessErr,
        WcOpcode::Flush,
        None,
    )?;
    // READ with invalidate: the local fast-reg sink is invalid afterwards.
    let (a, _b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    let page = Buffer::new(4096)?;
    let fr = Mr::alloc_fast_reg(pd.core(), 1)?;
    fr.map_mr_sg(
        &[BufSlice {
            buf: &page,
            offset: 0,
            len: 4096,
        }],
        4096,
    )?;
    let key = (fr.lkey() & !0xff) | 0x07;
    post1(
        &a,
        SendWr::new(
            7,
            SendOp::RegMr {
                mr: fr.core(),
                key,
                access: Access::LOCAL_WRITE,
            },
            &[],
        ),
    )?;
    let mut msg = [0u8; 64];
    pattern(5, &mut msg);
    buf.write(1024, &msg)?;
    let sink = [Sge {
        addr: fr.iova(),
        length: 64,
        lkey: key,
    }];
    post1(
        &a,
        SendWr::new(
            8,
            SendOp::ReadWithInv {
                remote_addr: buf.addr(1024),
                rkey: mr.rkey(),
                invalidate: key,
            },
            &sink,
        ),
    )?;
    let wcs = poll_n(&cq, 2)?;
    expect_wc(&wcs[1], 8, WcStatus::Success, WcOpcode::RdmaRead, Some(64))?;
    let mut got = [0u8; 64];
    page.read(0, &mut got)?;
    check(
        got == msg && !fr.is_valid(),
        "read landed, sink invalidated",
    )?;
    // UC takes WRITEs, not READs, atomics or local invalidation.
    let (u, w) = rc_pair(&pd, &cq, QpType::Uc, 8)?;
    post1(
        &u,
        SendWr::new(
            9,
            SendOp::Write {
                remote_addr: buf.addr(2048),
                rkey: mr.rkey(),
            },
            &eight,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        9,
        WcStatus::Success,
        WcOpcode::RdmaWrite,
        Some(8),
    )?;
    for op in [
        SendOp::Read {
            remote_addr: buf.addr(0),
            rkey: mr.rkey(),
        },
        SendOp::AtomicWrite {
            remote_addr: buf.addr(512),
            rkey: mr.rkey(),
        },
        SendOp::LocalInv(key),
    ] {
        check(
            post1(&u, SendWr::new(10, op, &eight)) == Err(EINVAL),
            "refused on UC",
        )?;
    }
    drop(w);
    Ok(())
}

fn cq_pool() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let before = d.cq_pool_len();
    let c1 = d.arc().cq_pool_get(100, PollCtx::Workqueue)?;
    let c2 = d.arc().cq_pool_get(200, PollCtx::Workqueue)?;
    check(
        Arc::ptr_eq(c1.core(), c2.core()),
        "small requests share a CQ",
    )?;
    let c3 = d.arc().cq_pool_get(4000, PollCtx::Workqueue)?;
    check(
        !Arc::ptr_eq(c1.core(), c3.core()),
        "a CQ without room is not shared",
    )?;
    let c4 = d.arc().cq_pool_get(10, PollCtx::Softirq)?;
    check(c4.poll_ctx() == Some(PollCtx::Softirq), "poll context kept")?;
    check(d.cq_pool_len() == before + 3, "three pooled CQs")?;
    check(
        d.arc().cq_pool_get(10, PollCtx::Direct).err() == Some(EINVAL),
        "direct CQs are not pooled",
    )?;
    check(
        d.arc().cq_pool_get(0, PollCtx::Workqueue).err() == Some(EINVAL),
        "0 entries refused",
    )?;
    // Data through a pooled CQ.
    let pd = Pd::alloc(d.arc())?;
    let qp = |pd: &Pd| {
        Qp::create(
            pd.core(),
            &QpInitAttr {
                qp_type: QpType::Rc,
                send_cq: c1.core(),
                recv_cq: c2.core(),
                srq: None,
                cap: caps(8),
                sq_sig_all: true,
                port_num: 1,
            },
        )
    };
    let (a, b) = (qp(&pd)?, qp(&pd)?);
    to_rts(&a, b.qpn())?;
    to_rts(&b, a.qpn())?;
    let buf = Buffer::new(4096)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, ALL_ACCESS)?;
    let sg = [buf.sge(0, 64, mr.lkey())?];
    let done = Arc::new(
        Done {
            count: AtomicU32::new(0),
            not_in_task: AtomicU32::new(0),
            failed: AtomicU32::new(0),
        },
        GFP_KERNEL,
    )?;
    let cqe: Arc<dyn CqeDone> = done.clone();
    b.post_recv(&[RecvWr {
        wr_id: 1,
        cqe: Some(cqe.clone()),
        sg: &sg,
    }])
    .map_err(|(_, e)| e)?;
    let mut wr = SendWr::new(2, SendOp::Send, &sg);
    wr.cqe = Some(cqe);
    post1(&a, wr)?;
    check(
        wait_until(2000, POLL_MS, || done.count.load(Ordering::Acquire) == 2),
        "completions through the pool",
    )?;
    drop((a, b, c1, c2, c3, c4));
    // Reservations are back: a big one fits the first CQ again.
    let again = d.arc().cq_pool_get(4000, PollCtx::Workqueue)?;
    check(
        d.cq_pool_len() == before + 3,
        "no new CQ once entries are returned",
    )?;
    drop(again);
    Ok(())
}

struct SrqEvents {
    limit: AtomicU32,
    last_wqe: AtomicU32,
}

impl EventHandler for SrqEvents {
    fn handle(&self, _dev: &Device, event: &Event) {
        if event.kind == EventKind::SrqLimitReached {
            self.limit.fetch_add(1, Ordering::Relaxed);
        }
        if let (EventKind::QpLastWqeReached, Element::Qp(n)) = (event.kind, event.element) {
            self.last_wqe.store(n, Ordering::Relaxed);
        }
    }
}

fn srq_shared_and_limit() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let events = Arc::new(
        SrqEvents {
            limit: AtomicU32::new(0),
            last_wqe: AtomicU32::new(0),
        },
        GFP_KERNEL,
    )?;
    let _reg = d.arc().register_event_handler(events.clone())?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 64, None)?;
    let srq = Srq::create(
        pd.core(),
        &SrqAttr {
            max_wr: 4,
            max_sge: 2,
            srq_limit: 0,
        },
    )?;
    let with_srq = |pd: &Pd| {
        Qp::create(
            pd.core(),
            &QpInitAttr {
                qp_type: QpType::Rc,
                send_cq: cq.core(),
                recv_cq: cq.core(),
                srq: Some(srq.core()),
                cap: QpCap {
                    max_recv_wr: 0,
                    ..caps(4)
                },
                sq_sig_all: false,
                port_num: 1,
            },
        )
    };
    let r1 = with_srq(&pd)?;
    let r2 = with_srq(&pd)?;
    let s1 = new_qp(&pd, &cq, QpType::Rc, 4)?;
    let s2 = new_qp(&pd, &cq, QpType::Rc, 4)?;
    to_rts(&r1, s1.qpn())?;
    to_rts(&s1, r1.qpn())?;
    to_rts(&r2, s2.qpn())?;
    to_rts(&s2, r2.qpn())?;
    let buf = Buffer::new(4096)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, ALL_ACCESS)?;
    let sg = [buf.sge(0, 16, mr.lkey())?];
    let rsg = [buf.sge(1024, 64, mr.lkey())?];
    srq.post_recv(&[
        RecvWr {
            wr_id: 100,
            cqe: None,
            sg: &rsg,
        },
        RecvWr {
            wr_id: 101,
            cqe: None,
            sg: &rsg,
        },
        RecvWr {
            wr_id: 102,
            cqe: None,
            sg: &rsg,
        },
    ])
    .map_err(|(_, e)| e)?;
    check(
        r1.post_recv(&[RecvWr {
            wr_id: 1,
            cqe: None,
            sg: &rsg,
        }]) == Err((0, EINVAL)),
        "QP with SRQ takes no receives",
    )?;
    srq.modify(None, Some(2))?;
    check(srq.query().srq_limit == 2, "limit armed")?;
    post1(&s1, SendWr::new(1, SendOp::Send, &sg))?;
    post1(&s2, SendWr::new(2, SendOp::Send, &sg))?;
    let wcs = poll_n(&cq, 4)?;
    let recvs: KVec<&Wc> = {
        let mut v = KVec::new();
        for w in wcs.iter().filter(|w| w.opcode.is_recv()) {
            v.push(w, GFP_KERNEL)?;
        }
        v
    };
    check(
        recvs.len() == 2 && recvs.iter().all(|w| w.status == WcStatus::Success),
        "both receives from the SRQ",
    )?;
    check(
        recvs.iter().any(|w| w.qp_num == r1.qpn()) && recvs.iter().any(|w| w.qp_num == r2.qpn()),
        "one per QP",
    )?;
    check(
        wait_until(2000, POLL_MS, || events.limit.load(Ordering::Relaxed) == 1),
        "SRQ limit event once",
    )?;
    check(srq.query().srq_limit == 0, "limit disarmed")?;
    // A QP of an SRQ entering the error state: "last WQE reached".
    r1.modify(&full_attr(QpState::Err, 0), AttrMask::STATE)?;
    check(
        wait_until(2000, POLL_MS, || {
            events.last_wqe.load(Ordering::Relaxed) == r1.qpn()
        }),
        "last WQE reached for the QP in error",
    )?;
    srq.modify(Some(8), None)?;
    check(srq.query().max_wr == 8, "resized")?;
    check(
        srq.modify(None, Some(9)) == Err(EINVAL),
        "limit above max_wr refused",
    )?;
    Ok(())
}

/// The current task, as a number.
fn me() -> usize {
    core::ptr::from_ref(kernel::current!()) as usize
}

struct CountHandler {
    calls: AtomicU32,
    inside: AtomicU32,
    overlaps: AtomicU32,
    /// The task inside `post_send` (0 when none), as [`me`] gives it.
    posting: AtomicUsize,
    during_post: AtomicU32,
    rearm: bool,
    polled: AtomicU64,
}

impl CountHandler {
    fn new(rearm: bool) -> Result<Arc<CountHandler>> {
        Ok(Arc::new(
            CountHandler {
                calls: AtomicU32::new(0),
                inside: AtomicU32::new(0),
                overlaps: AtomicU32::new(0),
                posting: AtomicUsize::new(0),
                during_post: AtomicU32::new(0),
                rearm,
                polled: AtomicU64::new(0),
            },
            GFP_KERNEL,
        )?)
    }
}

impl CompHandler for CountHandler {
    fn completion(&self, cq: &CqCore) {
        if self.inside.fetch_add(1, Ordering::AcqRel) != 0 {
            self.overlaps.fetch_add(1, Ordering::Relaxed);
        }
        if self.posting.load(Ordering::Acquire) == me() {
            self.during_post.fetch_add(1, Ordering::Relaxed);
        }
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.rearm {
            let mut wcs: [Wc; 8] = Default::default();
            loop {
                // Spin a little so overlaps would show.
                for _ in 0..200 {
                    core::hint::spin_loop();
                }
                let n = cq.poll(&mut wcs);
                self.polled.fetch_add(n as u64, Ordering::Relaxed);
                if n == 0 {
                    match cq.req_notify(NotifyFlags::NEXT_COMP | NotifyFlags::REPORT_MISSED_EVENTS)
                    {
                        Ok(true) => continue,
                        _ => break,
                    }
                }
            }
        }
        self.inside.fetch_sub(1, Ordering::AcqRel);
    }
}

fn cq_notify_peek_resize_moderation() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let h = CountHandler::new(false)?;
    let cq = Cq::create(d.arc(), 8, Some(h.clone()))?;
    let (a, b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    let buf = Buffer::new(4096)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, ALL_ACCESS)?;
    let sg = [buf.sge(0, 8, mr.lkey())?];
    let write = |id| {
        SendWr::new(
            id,
            SendOp::Write {
                remote_addr: buf.addr(100),
                rkey: mr.rkey(),
            },
            &sg,
        )
    };
    // Not armed: no call.
    post1(&a, write(1))?;
    check(
        wait_until(1000, POLL_MS, || cq.peek(8) == 1),
        "completion arrives",
    )?;
    check(
        h.calls.load(Ordering::Relaxed) == 0,
        "no handler call unarmed",
    )?;
    check(
        cq.req_notify(NotifyFlags::NEXT_COMP | NotifyFlags::REPORT_MISSED_EVENTS)?,
        "missed events reported",
    )?;
    let _ = poll_n(&cq, 1)?;
    check(
        !cq.req_notify(NotifyFlags::NEXT_COMP | NotifyFlags::REPORT_MISSED_EVENTS)?,
        "nothing missed",
    )?;
    post1(&a, write(2))?;
    check(
        wait_until(1000, POLL_MS, || h.calls.load(Ordering::Relaxed) == 1),
        "armed: one call",
    )?;
    post1(&a, write(3))?;
    check(
        wait_until(1000, POLL_MS, || cq.peek(8) == 2),
        "second completion arrives",
    )?;
    check(h.calls.load(Ordering::Relaxed) == 1, "one call per arm")?;
    let _ = poll_n(&cq, 2)?;
    // Solicited only: an unsolicited receive does not call, a solicited one does.
    cq.req_notify(NotifyFlags::SOLICITED)?;
    recv1(&b, 10, &sg)?;
    recv1(&b, 11, &sg)?;
    post1(&a, SendWr::new(4, SendOp::Send, &sg))?;
    check(
        wait_until(1000, POLL_MS, || cq.peek(8) == 2),
        "send and receive complete",
    )?;
    check(h.calls.load(Ordering::Relaxed) == 1, "unsolicited: no call")?;
    let mut wr = SendWr::new(5, SendOp::Send, &sg);
    wr.flags = SendFlags::SIGNALED | SendFlags::SOLICITED;
    post1(&a, wr)?;
    check(
        wait_until(1000, POLL_MS, || h.calls.load(Ordering::Relaxed) == 2),
        "solicited: a call",
    )?;
    check(
        wait_until(1000, POLL_MS, || cq.peek(8) == 4),
        "four waiting",
    )?;
    // Resize keeps the entries, in order.
    check(
        cq.resize(3) == Err(EINVAL),
        "resize below the waiting entries refused",
    )?;
    cq.resize(64)?;
    check(
        cq.capacity() == 64 && cq.peek(8) == 4,
        "resized with entries kept",
    )?;
    let wcs = poll_n(&cq, 4)?;
    check(wcs[3].wr_id == 5 || wcs[3].wr_id == 11, "order kept")?;
    // Moderation: 4 completions or 5 ms; a single one is reported by the timer.
    cq.modify(4, 5000)?;
    cq.req_notify(NotifyFlags::NEXT_COMP)?;
    post1(&a, write(6))?;
    check(
        wait_until(1000, POLL_MS, || cq.peek(8) == 1),
        "completion arrives",
    )?;
    let early = h.calls.load(Ordering::Relaxed);
    check(
        wait_until(2000, POLL_MS, || h.calls.load(Ordering::Relaxed) == 3),
        "the period fires the handler",
    )?;
    check(early == 2 || early == 3, "held back or fired by the period")?;
    let _ = poll_n(&cq, 1)?;
    cq.req_notify(NotifyFlags::NEXT_COMP)?;
    for id in 7..11 {
        post1(&a, write(id))?;
    }
    check(
        wait_until(1000, POLL_MS, || h.calls.load(Ordering::Relaxed) == 4),
        "the count fires the handler",
    )?;
    let _ = poll_n(&cq, 4)?;
    cq.modify(0, 0)?;
    check(cq.overflows() == 0, "no overflow")?;
    // Overflow: a CQ of 2 and three completions.
    let small = Cq::create(d.arc(), 2, None)?;
    let (c, _e) = rc_pair(&pd, &small, QpType::Rc, 8)?;
    c.post_send(&[write(20), write(21), write(22)])
        .map_err(|(_, e)| e)?;
    check(
        wait_until(1000, POLL_MS, || small.overflows() == 1),
        "overflow counted",
    )?;
    check(
        wait_until(1000, POLL_MS, || c.state() == QpState::Err),
        "QP in error after overflow",
    )?;
    Ok(())
}

struct Done {
    count: AtomicU32,
    not_in_task: AtomicU32,
    failed: AtomicU32,
}

impl CqeDone for Done {
    fn done(&self, _cq: &CqCore, wc: &Wc) {
        if !testing::in_task() {
            self.not_in_task.fetch_add(1, Ordering::Relaxed);
        }
        if wc.status != WcStatus::Success {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Release);
    }
}

fn poll_contexts_and_wr_cqe() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let buf = Buffer::new(4096)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, ALL_ACCESS)?;
    let sg = [buf.sge(0, 32, mr.lkey())?];
    for ctx in [
        PollCtx::Softirq,
        PollCtx::Workqueue,
        PollCtx::UnboundWorkqueue,
        PollCtx::Direct,
    ] {
        const N: u32 = 300;
        let cq = Cq::alloc(d.arc(), 1024, ctx)?;
        let (a, b) = rc_pair(&pd, &cq, QpType::Rc, 64)?;
        let done = Arc::new(
            Done {
                count: AtomicU32::new(0),
                not_in_task: AtomicU32::new(0),
                failed: AtomicU32::new(0),
            },
            GFP_KERNEL,
        )?;
        let cqe: Arc<dyn CqeDone> = done.clone();
        let mut posted = 0;
        while posted < N {
            let burst = core::cmp::min(32, N - posted);
            for _ in 0..burst {
                b.post_recv(&[RecvWr {
                    wr_id: 0,
                    cqe: Some(cqe.clone()),
                    sg: &sg,
                }])
                .map_err(|(_, e)| e)?;
                let mut wr = SendWr::new(0, SendOp::Send, &sg);
                wr.cqe = Some(cqe.clone());
                post1(&a, wr)?;
            }
            posted += burst;
            let want = 2 * posted;
            let ok = wait_until(5000, POLL_MS, || {
                if ctx == PollCtx::Direct {
                    let _ = cq.process_direct(64);
                }
                done.count.load(Ordering::Acquire) >= want
            });
            check(ok, "every completion dispatched")?;
        }
        check(
            done.count.load(Ordering::Acquire) == 2 * N,
            "exactly once each",
        )?;
        check(done.failed.load(Ordering::Relaxed) == 0, "all succeeded")?;
        let nit = done.not_in_task.load(Ordering::Relaxed);
        match ctx {
            PollCtx::Softirq => check(nit == 2 * N, "softirq context")?,
            _ => check(nit == 0, "task context")?,
        }
        check(
            cq.req_notify(NotifyFlags::NEXT_COMP).is_ok() != (ctx == PollCtx::Direct),
            "direct CQs cannot be armed",
        )?;
        drop((a, b));
        check(cq.destroy().is_ok(), "CQ destroyed")?;
    }
    Ok(())
}

fn drain_qp() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let buf = Buffer::new(4096)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, ALL_ACCESS)?;
    let sg = [buf.sge(0, 32, mr.lkey())?];
    for ctx in [PollCtx::Workqueue, PollCtx::Direct] {
        let cq = Cq::alloc(d.arc(), 64, ctx)?;
        let (a, _b) = rc_pair(&pd, &cq, QpType::Rc, 16)?;
        let done = Arc::new(
            Done {
                count: AtomicU32::new(0),
                not_in_task: AtomicU32::new(0),
                failed: AtomicU32::new(0),
            },
            GFP_KERNEL,
        )?;
        let cqe: Arc<dyn CqeDone> = done.clone();
        for _ in 0..10 {
            a.post_recv(&[RecvWr {
                wr_id: 0,
                cqe: Some(cqe.clone()),
                sg: &sg,
            }])
            .map_err(|(_, e)| e)?;
        }
        a.drain()?;
        check(
            done.count.load(Ordering::Acquire) == 10,
            "every receive handled before drain returns",
        )?;
        check(done.failed.load(Ordering::Relaxed) == 10, "flushed")?;
        check(a.state() == QpState::Err, "drained QP in ERR")?;
    }
    let raw = Cq::create(d.arc(), 8, None)?;
    let (c, _e) = rc_pair(&pd, &raw, QpType::Rc, 4)?;
    check(c.drain() == Err(EINVAL), "drain needs core-polled CQs")?;
    Ok(())
}

/// Completions pushed from several CPUs at once; the handler must never run
/// A device of one Ethernet port with one-entry tables, for the tests that
/// register their own devices.
fn small_desc(name_template: &'static CStr, node_guid: u64) -> DeviceDesc<'static> {
    DeviceDesc {
        name_template,
        node_type: NodeType::Ca,
        node_guid,
        port_count: 1,
        link_layer: LinkLayer::Ethernet,
        gid_tbl_len: 1,
        pkey_tbl_len: 1,
    }
}

/// twice at the same time.
fn one_handler_per_cq() -> Result {
    const PUSHERS: u32 = 4;
    const EACH: u32 = 2000;
    // The test is the provider here: pushing completions takes the
    // provider's handle on the CQ, which only a device's provider has.
    let driver = Driver::new(c_str!("storm"))?;
    let desc = small_desc(c_str!("storm%d"), 1);
    let pdev = driver.register_device(&desc, Arc::new(Storm, GFP_KERNEL)?)?;
    let h = CountHandler::new(true)?;
    let cq = Cq::create(&pdev, 4096, Some(h.clone()))?;
    cq.req_notify(NotifyFlags::NEXT_COMP)?;
    let core = ProviderCq::of(&pdev, cq.core()).ok_or(EINVAL)?;
    let finished = Arc::new(AtomicU32::new(0), GFP_KERNEL)?;
    for p in 0..PUSHERS {
        let (core, finished) = (core.clone(), finished.clone());
        workqueue::system_unbound().try_spawn(GFP_KERNEL, move || {
            for i in 0..EACH {
                let wc = Wc {
                    wr_id: u64::from(p * EACH + i),
                    ..Wc::default()
                };
                while core.push(wc.clone(), false).is_err() {
                    time::msleep(1);
                }
            }
            finished.fetch_add(1, Ordering::Release);
        })?;
    }
    let ok = wait_until(60_000, POLL_MS, || {
        finished.load(Ordering::Acquire) == PUSHERS
            && h.polled.load(Ordering::Relaxed) == u64::from(PUSHERS * EACH)
    });
    pr_info!(
        "storm: {} handler calls, {} polled, {} overlaps, {} overflows\n",
        h.calls.load(Ordering::Relaxed),
        h.polled.load(Ordering::Relaxed),
        h.overlaps.load(Ordering::Relaxed),
        cq.overflows()
    );
    check(ok, "every completion polled by the handler")?;
    check(
        h.overlaps.load(Ordering::Relaxed) == 0,
        "never two handlers at once",
    )?;
    drop(cq);
    driver.unregister_device(&pdev);
    Ok(())
}

/// The device of `one_handler_per_cq`: CQs only, deep ones.
struct Storm;

impl DeviceOps for Storm {
    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            max_cq: 4,
            max_cqe: 4096,
            ..DeviceAttr::default()
        })
    }

    fn query_port(&self, _port: u32) -> Result<PortAttr> {
        Ok(PortAttr::down(Mtu::Mtu1024))
    }
}

fn verbs_in_atomic_context() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 256, None)?;
    let (a, b) = rc_pair(&pd, &cq, QpType::Rc, 64)?;
    let buf = Buffer::new(4096)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, ALL_ACCESS)?;
    let sg = [buf.sge(0, 16, mr.lkey())?];
    let failures = AtomicU32::new(0);
    let polled = AtomicU32::new(0);
    let mut verbs = || {
        let mut ok = b
            .post_recv(&[RecvWr {
                wr_id: 1,
                cqe: None,
                sg: &sg,
            }])
            .is_ok();
        ok &= a.post_send(&[SendWr::new(2, SendOp::Send, &sg)]).is_ok();
        let mut wcs: [Wc; 4] = Default::default();
        polled.fetch_add(cq.poll(&mut wcs) as u32, Ordering::Relaxed);
        ok &= cq.req_notify(NotifyFlags::NEXT_COMP).is_ok();
        let _ = cq.peek(4);
        match Ah::create(pd.core(), &av()) {
            Ok(ah) => {
                ok &= ah.modify(&av()).is_ok();
                let _ = ah.query();
                ok &= ah.destroy().is_ok();
            }
            Err(_) => ok = false,
        }
        if !ok {
            failures.fetch_add(1, Ordering::Relaxed);
        }
    };
    let lock = Arc::pin_init(
        rdma::new_spinlock_irq!(0u32, "verbs_test::lock"),
        GFP_KERNEL,
    )?;
    {
        let _held = lock.lock();
        verbs();
    }
    testing::with_irqs_disabled(&mut verbs);
    testing::with_bh_disabled(&mut verbs);
    testing::in_hardirq(&mut verbs);
    check(
        failures.load(Ordering::Relaxed) == 0,
        "every verb worked in every context",
    )?;
    // 4 rounds of one SEND each: 8 completions in all.
    check(
        wait_until(2000, POLL_MS, || {
            let mut wcs: [Wc; 4] = Default::default();
            polled.fetch_add(cq.poll(&mut wcs) as u32, Ordering::Relaxed);
            polled.load(Ordering::Relaxed) == 8
        }),
        "all completed",
    )
}

fn inline_completion_is_caught() -> Result {
    let d = dev(c_str!("swinl0"))?;
    let pd = Pd::alloc(d.arc())?;
    let h = CountHandler::new(false)?;
    let cq = Cq::create(d.arc(), 16, Some(h.clone()))?;
    let (a, b) = rc_pair(&pd, &cq, QpType::Rc, 8)?;
    let buf = Buffer::new(4096)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, ALL_ACCESS)?;
    let sg = [buf.sge(0, 16, mr.lkey())?];
    recv1(&b, 1, &sg)?;
    cq.req_notify(NotifyFlags::NEXT_COMP)?;
    h.posting.store(me(), Ordering::Release);
    post1(&a, SendWr::new(2, SendOp::Send, &sg))?;
    let completed_inline = cq.peek(4) == 2;
    h.posting.store(0, Ordering::Release);
    check(completed_inline, "the provider completed inline")?;
    check(cq.inline_signals() == 1, "the core caught it")?;
    check(
        wait_until(1000, POLL_MS, || h.calls.load(Ordering::Relaxed) == 1),
        "the handler ran later",
    )?;
    check(
        h.during_post.load(Ordering::Relaxed) == 0,
        "not from within post_send",
    )
}

/// A provider of the test's own, to unregister a device under live objects.
struct Leaky;

struct NoTransport;

impl QpOps for NoTransport {
    fn post_send(&self, _qp: &ProviderQp) {}
}

impl DeviceOps for Leaky {
    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            max_qp: 4,
            max_qp_wr: 16,
            max_send_sge: 2,
            max_recv_sge: 2,
            max_cq: 4,
            max_cqe: 64,
            max_mr: 4,
            max_pd: 4,
            max_srq: 2,
            max_srq_wr: 16,
            max_srq_sge: 2,
            max_ah: 4,
            ..DeviceAttr::default()
        })
    }

    fn query_port(&self, _port: u32) -> Result<PortAttr> {
        Ok(PortAttr::down(Mtu::Mtu1024))
    }

    fn create_qp(&self, _qp: &QpInfo) -> Result<Arc<dyn QpOps>> {
        Ok(Arc::new(NoTransport, GFP_KERNEL)?)
    }
}

/// A device that implements only the mandatory operations.
struct Bare;

impl DeviceOps for Bare {
    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            max_qp: 4,
            max_qp_wr: 16,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_cq: 4,
            max_cqe: 64,
            max_mr: 4,
            max_pd: 4,
            ..DeviceAttr::default()
        })
    }

    fn query_port(&self, _port: u32) -> Result<PortAttr> {
        Ok(PortAttr::down(Mtu::Mtu1024))
    }
}

fn optional_verbs_report_eopnotsupp() -> Result {
    let eopnotsupp = rdma::kshim::errno::eopnotsupp();
    let driver = Driver::new(c_str!("bare"))?;
    let desc = small_desc(c_str!("bare%d"), 2);
    let dev = driver.register_device(&desc, Arc::new(Bare, GFP_KERNEL)?)?;
    let pd = Pd::alloc(&dev)?;
    let cq = Cq::create(&dev, 8, None)?;
    let qp = Qp::create(
        pd.core(),
        &QpInitAttr {
            qp_type: QpType::Rc,
            send_cq: cq.core(),
            recv_cq: cq.core(),
            srq: None,
            cap: QpCap {
                max_send_wr: 1,
                max_recv_wr: 1,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            port_num: 1,
        },
    );
    check(qp.err() == Some(eopnotsupp), "no create_qp: EOPNOTSUPP")?;
    check(
        Mw::alloc(pd.core(), MwType::Type2).err() == Some(eopnotsupp),
        "no MEM_WINDOW: EOPNOTSUPP",
    )?;
    check(
        Mr::alloc_fast_reg(pd.core(), 1).err() == Some(eopnotsupp),
        "no MEM_MGT_EXTENSIONS: EOPNOTSUPP",
    )?;
    let srq = Srq::create(
        pd.core(),
        &SrqAttr {
            max_wr: 1,
            max_sge: 1,
            srq_limit: 0,
        },
    );
    check(srq.err() == Some(eopnotsupp), "no SRQs: EOPNOTSUPP")?;
    check(
        Ah::create(
            pd.core(),
            &AhAttr {
                port_num: 1,
                ..AhAttr::default()
            },
        )
        .err()
            == Some(eopnotsupp),
        "no AHs: EOPNOTSUPP",
    )?;
    // Limits: a fifth PD is refused.
    let more = [Pd::alloc(&dev)?, Pd::alloc(&dev)?, Pd::alloc(&dev)?];
    check(Pd::alloc(&dev).is_err(), "max_pd enforced")?;
    drop((more, cq, pd));
    driver.unregister_device(&dev);
    Ok(())
}

/// The device of `tm_srq_list_operations`: PDs, CQs and SRQs, and tag
/// matching for at most 8 tags, 4 operations a chain, 4 SGEs a buffer.
struct TmDev;

impl DeviceOps for TmDev {
    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            max_cq: 4,
            max_cqe: 64,
            max_mr: 4,
            max_pd: 4,
            max_srq: 4,
            max_srq_wr: 16,
            max_srq_sge: 4,
            tm_caps: TmCaps {
                max_rndv_hdr_size: 64,
                max_num_tags: 8,
                flags: TM_CAP_RC,
                max_ops: 4,
                max_sge: 4,
            },
            ..DeviceAttr::default()
        })
    }

    fn query_port(&self, _port: u32) -> Result<PortAttr> {
        Ok(PortAttr::down(Mtu::Mtu1024))
    }
}

fn tm_op<'a>(wr_id: u64, kind: OpsKind<'a>, signaled: bool) -> OpsWr<'a> {
    OpsWr {
        wr_id,
        kind,
        signaled,
        unexpected_cnt: None,
        handle: 0,
    }
}

fn tm_add<'a>(wr_id: u64, sg: &'a [Sge], tag: u64, signaled: bool) -> OpsWr<'a> {
    tm_op(
        wr_id,
        OpsKind::Add {
            buf: RecvWr {
                wr_id: 1000 + wr_id,
                cqe: None,
                sg,
            },
            tag,
            mask: u64::MAX,
        },
        signaled,
    )
}

/// A TM SRQ's list operations, without traffic: limits at creation, a
/// chain's handles and completions (signaled ones only), a full list
/// and a chain beyond `max_ops` (`ENOMEM` at the first one not carried
/// out), deletes of live, gone and unknown handles, too many SGEs, and
/// list operations on an ordinary SRQ.
fn tm_srq_list_operations() -> Result {
    let driver = Driver::new(c_str!("tmdev"))?;
    let desc = small_desc(c_str!("tmdev%d"), 3);
    let dev = driver.register_device(&desc, Arc::new(TmDev, GFP_KERNEL)?)?;
    let run = || -> Result {
        let pd = Pd::alloc(&dev)?;
        let cq = Cq::create(&dev, 32, None)?;
        let attr = SrqAttr {
            max_wr: 4,
            max_sge: 2,
            srq_limit: 0,
        };
        let cap = TmCap {
            max_num_tags: 4,
            max_ops: 3,
        };
        let refused = |a: &SrqAttr, c: &TmCap| Srq::create_tm(pd.core(), a, c, cq.core()).err();
        check(
            refused(
                &attr,
                &TmCap {
                    max_num_tags: 9,
                    ..cap
                },
            ) == Some(EINVAL)
                && refused(&attr, &TmCap { max_ops: 5, ..cap }) == Some(EINVAL)
                && refused(
                    &attr,
                    &TmCap {
                        max_num_tags: 0,
                        ..cap
                    },
                ) == Some(EINVAL)
                && refused(&SrqAttr { max_sge: 5, ..attr }, &cap) == Some(EINVAL),
            "a TM SRQ beyond the device's limits: EINVAL",
        )?;
        let other = dev_cq_elsewhere()?;
        check(
            Srq::create_tm(pd.core(), &attr, &cap, other.core()).err() == Some(EINVAL),
            "a CQ of another device: EINVAL",
        )?;
        let srq = Srq::create_tm(pd.core(), &attr, &cap, cq.core())?;
        check(srq.core().is_tm(), "a TM SRQ")?;
        let buf = Buffer::new(4096)?;
        let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, ALL_ACCESS)?;
        let sg = [buf.sge(0, 64, mr.lkey())?, buf.sge(64, 64, mr.lkey())?];
        let mut ops = [
            tm_add(1, &sg, 0x11, true),
            tm_add(2, &sg[..1], 0x22, false),
            tm_op(3, OpsKind::Sync, true),
        ];
        check(srq.core().post_ops(&mut ops).is_ok(), "a chain of three")?;
        let (h1, h2) = (ops[0].handle, ops[1].handle);
        check(h1 != h2, "two handles")?;
        let wcs = poll_n(cq.core(), 2)?;
        expect_wc(&wcs[0], 1, WcStatus::Success, WcOpcode::TmAdd, None)?;
        expect_wc(&wcs[1], 3, WcStatus::Success, WcOpcode::TmSync, None)?;
        check(
            wcs.iter()
                .all(|w| !w.wc_flags.contains(WcFlags::TM_SYNC_REQ)),
            "no sync wanted",
        )?;
        check(
            cq.core().peek(1) == 0,
            "the unsignaled ADD left no completion",
        )?;
        // Two more fit; the third is refused, the ones before it stay.
        let mut ops = [
            tm_add(4, &sg, 0x44, false),
            tm_add(5, &sg, 0x55, false),
            tm_add(6, &sg, 0x66, true),
        ];
        check(
            srq.core().post_ops(&mut ops).err() == Some((2, ENOMEM)),
            "a full list: ENOMEM at the third",
        )?;
        let h4 = ops[0].handle;
        // Delete: a listed entry; then the same handle again; one never
        // issued.
        let mut del = [OpsWr {
            handle: h4,
            ..tm_op(7, OpsKind::Del, true)
        }];
        check(srq.core().post_ops(&mut del).is_ok(), "TAG_DEL")?;
        expect_wc(
            &poll_n(cq.core(), 1)?[0],
            7,
            WcStatus::Success,
            WcOpcode::TmDel,
            None,
        )?;
        check(
            srq.core().post_ops(&mut del).err() == Some((0, EINVAL)),
            "TAG_DEL of a deleted entry: EINVAL",
        )?;
        let mut bogus = [OpsWr {
            handle: 0x7_ffff,
            ..tm_op(8, OpsKind::Del, true)
        }];
        check(
            srq.core().post_ops(&mut bogus).err() == Some((0, EINVAL)),
            "TAG_DEL of no entry: EINVAL",
        )?;
        // A chain beyond max_ops: the first three are carried out.
        let mut syncs = [
            tm_op(9, OpsKind::Sync, true),
            tm_op(10, OpsKind::Sync, true),
            tm_op(11, OpsKind::Sync, true),
            tm_op(12, OpsKind::Sync, true),
        ];
        check(
            srq.core().post_ops(&mut syncs).err() == Some((3, ENOMEM)),
            "a chain beyond max_ops: ENOMEM at the fourth",
        )?;
        let wcs = poll_n(cq.core(), 3)?;
        for (w, id) in wcs.iter().zip([9u64, 10, 11]) {
            expect_wc(w, id, WcStatus::Success, WcOpcode::TmSync, None)?;
        }
        // Too many SGEs for the SRQ (max_sge 2).
        let sg3 = [sg[0], sg[1], sg[1]];
        let mut wide = [tm_add(13, &sg3, 0x77, true)];
        check(
            srq.core().post_ops(&mut wide).err() == Some((0, EINVAL)),
            "three SGEs: EINVAL",
        )?;
        // An ordinary SRQ takes no list operations.
        let plain = Srq::create(pd.core(), &attr)?;
        let mut one = [tm_op(14, OpsKind::Sync, true)];
        check(
            plain.core().post_ops(&mut one).err() == Some((0, EINVAL)),
            "list operations on an ordinary SRQ: EINVAL",
        )?;
        check(cq.core().peek(1) == 0, "no completion left")?;
        Ok(())
    };
    let r = run();
    driver.unregister_device(&dev);
    r
}

/// A CQ of swdev0 (no tag matching there).
fn dev_cq_elsewhere() -> Result<Cq> {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc(d.arc())?;
    let cq = Cq::create(d.arc(), 4, None)?;
    let refused = Srq::create_tm(
        pd.core(),
        &SrqAttr {
            max_wr: 1,
            max_sge: 1,
            srq_limit: 0,
        },
        &TmCap {
            max_num_tags: 1,
            max_ops: 1,
        },
        cq.core(),
    )
    .err();
    check(
        refused == Some(rdma::kshim::errno::eopnotsupp()),
        "no tag matching on swdev0: EOPNOTSUPP",
    )?;
    Ok(cq)
}

/// A PD's global key (a DMA MR) lets the device reach any buffer.
fn dma_mr() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pd = Pd::alloc_with(d.arc(), PdFlags::UNSAFE_GLOBAL_RKEY)?;
    let cq = Cq::create(d.arc(), 8, None)?;
    let (a, _b) = rc_pair(&pd, &cq, QpType::Rc, 4)?;
    let buf = Buffer::new(4096)?;
    let key = pd.unsafe_global_rkey().ok_or(EINVAL)?;
    let mut msg = [0u8; 32];
    pattern(9, &mut msg);
    buf.write(0, &msg)?;
    let sg = [Sge {
        addr: buf.addr(0),
        length: 32,
        lkey: key,
    }];
    post1(
        &a,
        SendWr::new(
            1,
            SendOp::Write {
                remote_addr: buf.addr(2048),
                rkey: key,
            },
            &sg,
        ),
    )?;
    expect_wc(
        &poll_n(&cq, 1)?[0],
        1,
        WcStatus::Success,
        WcOpcode::RdmaWrite,
        Some(32),
    )?;
    let mut got = [0u8; 32];
    buf.read(2048, &mut got)?;
    check(got == msg, "moved through the DMA MR")
}

fn leaked_objects_are_torn_down() -> Result {
    let driver = Driver::new(c_str!("leaky"))?;
    let desc = small_desc(c_str!("leaky%d"), 1);
    let dev = driver.register_device(&desc, Arc::new(Leaky, GFP_KERNEL)?)?;
    let pd = Pd::alloc(&dev)?;
    let cq = Cq::alloc(&dev, 16, PollCtx::Softirq)?;
    let buf = Buffer::new(64)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 64, Access::LOCAL_WRITE)?;
    let srq = Srq::create(
        pd.core(),
        &SrqAttr {
            max_wr: 4,
            max_sge: 1,
            srq_limit: 0,
        },
    )?;
    let qp = Qp::create(
        pd.core(),
        &QpInitAttr {
            qp_type: QpType::Ud,
            send_cq: cq.core(),
            recv_cq: cq.core(),
            srq: None,
            cap: QpCap {
                max_send_wr: 4,
                max_recv_wr: 4,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            port_num: 1,
        },
    )?;
    check(
        dev.resource_counts() == [1, 1, 1, 1, 1, 0, 0],
        "objects live",
    )?;
    driver.unregister_device(&dev);
    check(dev.resource_counts() == [0; 7], "unregister tore them down")?;
    let sg = [buf.sge(0, 8, mr.lkey())?];
    check(
        qp.post_recv(&[RecvWr {
            wr_id: 1,
            cqe: None,
            sg: &sg,
        }]) == Err((0, ENODEV)),
        "verbs on a leaked QP: ENODEV",
    )?;
    check(
        qp.modify(&full_attr(QpState::Init, 0), AttrMask::STATE) == Err(ENODEV),
        "modify: ENODEV",
    )?;
    check(Pd::alloc(&dev).err() == Some(ENODEV), "no new objects")?;
    check(
        cq.req_notify(NotifyFlags::NEXT_COMP).is_ok(),
        "CQ ring memory still safe to use",
    )?;
    // Dropping the handles afterwards is harmless.
    drop((qp, srq, mr, cq, pd));
    Ok(())
}

/// Nothing is left on `swdev0` but its CQ pool.
fn nothing_left_behind() -> Result {
    let d = dev(c_str!("swdev0"))?;
    let pooled = d.cq_pool_len() as u32;
    check(
        d.resource_counts() == [0, pooled, 0, 0, 0, 0, 0],
        "swdev0 has no objects but its CQ pool",
    )
}

const CASES: &[FnCase<()>] = &[
    case!(resources_and_destroy_order),
    case!(qp_state_machine),
    case!(rc_data_integrity),
    case!(ud_with_grh),
    case!(access_violations_and_flush),
    case!(fast_reg_and_invalidate),
    case!(memory_windows),
    case!(window_outlives_qp),
    case!(mr_with_windows),
    case!(extended_opcodes),
    case!(srq_shared_and_limit),
    case!(cq_notify_peek_resize_moderation),
    case!(poll_contexts_and_wr_cqe),
    case!(drain_qp),
    case!(cq_pool),
    case!(one_handler_per_cq),
    case!(verbs_in_atomic_context),
    case!(inline_completion_is_caught),
    case!(leaked_objects_are_torn_down),
    case!(optional_verbs_report_eopnotsupp),
    case!(tm_srq_list_operations),
    case!(dma_mr),
    case!(nothing_left_behind),
];

struct VerbsTest;

impl kernel::Module for VerbsTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut ())?;
        Ok(VerbsTest)
    }
}
