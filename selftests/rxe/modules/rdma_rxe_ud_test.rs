// SPDX-License-Identifier: GPL-2.0

//! Selftest: UD SENDs between two `rdma_rs_rxe` devices on the wire.
//!
//! `ud.sh` makes `rxa` on 10.78.0.1 / fd00:78::1 and `rxb` on 10.78.0.2 /
//! fd00:78::2, each in its own network namespace, joined by a veth pair;
//! this module sends UD messages both ways, over IPv4 and IPv6, through the
//! verbs of `rdma_core` and checks every byte, the GRH, the source QP,
//! immediate data, an address handle made from the completion, and what
//! must not arrive.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::{EAGAIN, EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::str::CStr;

use rdma::device::{self, Device, DeviceRef};
use rdma::kshim::testing;
use rdma::spec::attr::Gid;
use rdma::spec::opcodes::{Access, WcFlags, WcOpcode, WcStatus};
use rdma::spec::qp_state::{QpState, QpType};
use rdma::verbs::ah::AhAttr;
use rdma::verbs::cq::CqCore;
use rdma::verbs::qp::QpCap;
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{RecvWr, SendOp, SendWr, UdDest};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, Fixture, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{End, Opts, Port};

module! {
    type: RxeUdTest,
    name: "rdma_rxe_ud_test",
    author: "rdma-rs developers",
    description: "Selftest: UD between two rdma_rs_rxe devices",
    license: "GPL",
}

const QKEY: u32 = 0x1234_5678;
const BUF: usize = 64 * 1024;
const SLOT: usize = 4096 + 64;

/// Each side: a UD QP 64 deep, every send signaled, two SGEs and 64
/// bytes inline, and a buffer of receive slots.
const OPTS: Opts = Opts {
    qp_type: QpType::Ud,
    mr_access: Access::LOCAL_WRITE,
    buf_len: BUF,
    cqe: 256,
    cap: QpCap {
        max_send_wr: 64,
        max_recv_wr: 64,
        max_send_sge: 2,
        max_recv_sge: 2,
        max_inline_data: 64,
    },
    sq_sig_all: true,
    qkey: QKEY,
    ..rc::RC
};

/// One side: device, PD, CQ, UD QP in RTS and a registered buffer.
fn side(name: &CStr, gid: Gid) -> Result<End> {
    let e = End::new(Port { name, gid }, &OPTS)?;
    e.ready()?;
    Ok(e)
}

/// Posts `n` receives, one slot each.
fn post_recvs(e: &End, n: usize) -> Result {
    for i in 0..n {
        let sg = [e.buf.sge(i * SLOT, SLOT as u32, e.mr.lkey())?];
        e.qp.post_recv(&[RecvWr {
            wr_id: i as u64,
            cqe: None,
            sg: &sg,
        }])
        .map_err(|(_, e)| e)?;
    }
    Ok(())
}

fn poll(cq: &CqCore, n: usize, ms: u32) -> Result<KVec<Wc>> {
    let mut got = KVec::new();
    let mut wcs: [Wc; 8] = Default::default();
    for _ in 0..ms / 2 {
        let k = cq.poll(&mut wcs);
        for wc in wcs.iter_mut().take(k) {
            got.push(core::mem::take(wc), GFP_KERNEL)?;
        }
        if got.len() >= n {
            return Ok(got);
        }
        testing::msleep(2);
    }
    pr_err!("polled {} of {} completions\n", got.len(), n);
    Err(EAGAIN)
}

fn pattern(seed: u32, out: &mut [u8]) {
    let mut x = seed | 1;
    for b in out.iter_mut() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
}

/// Sends messages of several sizes from `a` to `b` and checks them.
fn one_way(a: &End, b: &End) -> Result {
    let sizes = [0usize, 1, 7, 64, 513, 1000, 1024];
    post_recvs(b, sizes.len())?;
    let ah = a.ah(b.gid)?;
    let mut want = KVec::from_elem(0u8, 1024, GFP_KERNEL)?;
    for (i, &len) in sizes.iter().enumerate() {
        pattern(i as u32 + 3, &mut want[..len]);
        a.buf.write(i * SLOT, &want[..len])?;
        let sg = [a.buf.sge(i * SLOT, len as u32, a.mr.lkey())?];
        let op = if i % 2 == 1 {
            SendOp::SendWithImm(0xabc0_0000 + i as u32)
        } else {
            SendOp::Send
        };
        let mut wr = SendWr::new(100 + i as u64, op, &sg);
        wr.ud = Some(UdDest {
            ah: ah.core(),
            remote_qpn: b.qp.qpn(),
            remote_qkey: QKEY,
        });
        a.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
        let s = poll(&a.cq, 1, 2000)?;
        if s[0].status != WcStatus::Success || s[0].opcode != WcOpcode::Send {
            pr_err!(
                "send {}: status {:?} opcode {:?}\n",
                len,
                s[0].status,
                s[0].opcode
            );
            return Err(EINVAL);
        }
        let r = poll(&b.cq, 1, 2000)?;
        let wc = &r[0];
        if wc.status != WcStatus::Success
            || wc.byte_len as usize != len + 40
            || wc.wr_id != i as u64
        {
            pr_err!(
                "recv {}: status {:?} len {} wr_id {}\n",
                len,
                wc.status,
                wc.byte_len,
                wc.wr_id
            );
            return Err(EINVAL);
        }
        check(
            wc.src_qp == a.qp.qpn() && wc.wc_flags.contains(WcFlags::GRH),
            "source QP and GRH",
        )?;
        let v4 = a.gid.to_ipv4().is_some();
        check(
            wc.network_hdr_type == if v4 { 2 } else { 3 },
            "network header type",
        )?;
        let imm = wc.wc_flags.contains(WcFlags::WITH_IMM);
        check(
            imm == (i % 2 == 1) && (!imm || wc.imm_data == 0xabc0_0000 + i as u32),
            "immediate data",
        )?;
        let mut got = KVec::from_elem(0u8, len + 40, GFP_KERNEL)?;
        b.buf.read(i * SLOT, &mut got)?;
        check(got[40..] == want[..len], "payload byte for byte")?;
        // An address back to the sender, from the completion and its GRH.
        let mut grh = [0u8; 40];
        grh.copy_from_slice(&got[..40]);
        let back = AhAttr::from_wc(&b.dev, 1, wc, &grh)?;
        check(back.grh.dgid == a.gid, "reply address is the sender")?;
    }
    Ok(())
}

fn too_long_and_wrong_qkey(a: &End, b: &End) -> Result {
    let ah = a.ah(b.gid)?;
    // 1025 bytes: more than the 1024-byte IB MTU of a 1500-byte veth.
    let sg = [a.buf.sge(0, 1025, a.mr.lkey())?];
    let mut wr = SendWr::new(1, SendOp::Send, &sg);
    wr.ud = Some(UdDest {
        ah: ah.core(),
        remote_qpn: b.qp.qpn(),
        remote_qkey: QKEY,
    });
    post_recvs(b, 1)?;
    a.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
    let s = poll(&a.cq, 1, 2000)?;
    // As the kernel's rxe: completed with success, not sent (IBTA
    // C10-93.1.1), and the QP goes on.
    if s[0].status != WcStatus::Success {
        pr_err!("over the MTU: status {:?}\n", s[0].status);
        return Err(EINVAL);
    }
    testing::msleep(200);
    let mut wcs: [Wc; 1] = Default::default();
    check(b.cq.poll(&mut wcs) == 0, "nothing arrives over the MTU")?;
    check(a.qp.state() == QpState::Rts, "the QP stays in RTS")?;
    let sg = [a.buf.sge(0, 16, a.mr.lkey())?];
    let mut wr = SendWr::new(3, SendOp::Send, &sg);
    wr.ud = Some(UdDest {
        ah: ah.core(),
        remote_qpn: b.qp.qpn(),
        remote_qkey: QKEY,
    });
    a.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
    check(
        poll(&a.cq, 1, 2000)?[0].status == WcStatus::Success,
        "a message within the MTU after it",
    )?;
    check(
        poll(&b.cq, 1, 2000)?[0].status == WcStatus::Success,
        "and it arrives",
    )?;
    // A fresh sender for the Q_Key case.
    let c = side(a.dev.name(), a.gid)?;
    post_recvs(b, 1)?;
    let sg = [c.buf.sge(0, 16, c.mr.lkey())?];
    let ah = c.ah(b.gid)?;
    let mut wr = SendWr::new(2, SendOp::Send, &sg);
    wr.ud = Some(UdDest {
        ah: ah.core(),
        remote_qpn: b.qp.qpn(),
        remote_qkey: QKEY ^ 1,
    });
    c.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
    check(
        poll(&c.cq, 1, 2000)?[0].status == WcStatus::Success,
        "sender completes",
    )?;
    testing::msleep(200);
    let mut wcs: [Wc; 1] = Default::default();
    check(
        b.cq.poll(&mut wcs) == 0,
        "nothing arrives with a wrong Q_Key",
    )
}

/// To the device's own address: the loopback path, no network stack.
fn loopback(a: &End) -> Result {
    let c = side(a.dev.name(), a.gid)?;
    post_recvs(&c, 1)?;
    let mut msg = [0u8; 300];
    pattern(77, &mut msg);
    a.buf.write(0, &msg)?;
    let sg = [a.buf.sge(0, 300, a.mr.lkey())?];
    let ah = a.ah(c.gid)?;
    let mut wr = SendWr::new(9, SendOp::Send, &sg);
    wr.ud = Some(UdDest {
        ah: ah.core(),
        remote_qpn: c.qp.qpn(),
        remote_qkey: QKEY,
    });
    a.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
    check(poll(&a.cq, 1, 2000)?[0].status == WcStatus::Success, "sent")?;
    let r = poll(&c.cq, 1, 2000)?;
    check(
        r[0].status == WcStatus::Success && r[0].byte_len == 340,
        "received",
    )?;
    let mut got = [0u8; 300];
    c.buf.read(40, &mut got)?;
    check(got == msg, "payload byte for byte")
}

fn devices_listed(names: &[&CStr]) -> Result {
    for n in names {
        let d: DeviceRef = device::get_by_name(n).ok_or(ENODEV)?;
        let dev: &Device = &d;
        check(
            dev.query_port(1)?.state == rdma::spec::attr::PortState::Active,
            "port active",
        )?;
    }
    Ok(())
}

/// QP1 (GSI) on each device: the QP number is 1, one per device; a
/// 256-byte MAD goes from one QP1 to the other with the GSI Q_Key whatever
/// the work request says (here 0), arrives behind its 40-byte network
/// header with the sender's QPN 1; and a datagram to QP1 with another Q_Key
/// (from a UD QP) is dropped.
fn gsi(a: &End, b: &End) -> Result {
    let o = Opts {
        qp_type: QpType::Gsi,
        qkey: 0x8001_0000,
        ..OPTS
    };
    let (g1, g2) = (
        End::new(
            Port {
                name: c_str!("rxa"),
                gid: a.gid,
            },
            &o,
        )?,
        End::new(
            Port {
                name: c_str!("rxb"),
                gid: b.gid,
            },
            &o,
        )?,
    );
    g1.ready()?;
    g2.ready()?;
    check(g1.qp.qpn() == 1 && g2.qp.qpn() == 1, "QP1")?;
    check(
        End::new(
            Port {
                name: c_str!("rxb"),
                gid: b.gid,
            },
            &o,
        )
        .is_err(),
        "one GSI QP per device",
    )?;
    post_recvs(&g2, 2)?;
    let mut mad = [0u8; 256];
    pattern(77, &mut mad);
    mad[0] = 1; // base version
    g1.buf.write(0, &mad)?;
    let ah = g1.ah(g2.gid)?;
    let sg = [g1.buf.sge(0, 256, g1.mr.lkey())?];
    let mut wr = SendWr::new(500, SendOp::Send, &sg);
    wr.ud = Some(UdDest {
        ah: ah.core(),
        remote_qpn: 1,
        remote_qkey: 0,
    });
    g1.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
    let c = poll(&g1.cq, 1, 2000)?;
    check(c[0].status == WcStatus::Success, "MAD sent")?;
    let r = poll(&g2.cq, 1, 2000)?;
    let wc = &r[0];
    check(
        wc.status == WcStatus::Success && wc.byte_len == 256 + 40 && wc.src_qp == 1,
        "MAD received from QP1 behind the network header",
    )?;
    check(wc.wc_flags.contains(WcFlags::GRH), "GRH flag")?;
    let mut got = [0u8; 256];
    g2.buf.read(40, &mut got)?;
    check(got == mad, "MAD intact")?;
    // A UD QP's datagram to QP1 under its own Q_Key: dropped.
    let sg = [a.buf.sge(0, 64, a.mr.lkey())?];
    let ah = a.ah(g2.gid)?;
    let mut wr = SendWr::new(501, SendOp::Send, &sg);
    wr.ud = Some(UdDest {
        ah: ah.core(),
        remote_qpn: 1,
        remote_qkey: QKEY,
    });
    a.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
    poll(&a.cq, 1, 2000)?;
    testing::msleep(200);
    let mut none: [Wc; 1] = Default::default();
    check(
        g2.cq.poll(&mut none) == 0,
        "wrong Q_Key not delivered to QP1",
    )
}

/// The two sides of one address family (IPv6 or not), shared by its cases.
struct Sides(Fixture<bool, (End, End)>);

impl Sides {
    /// Runs `f` on the sides on IPv6 (fd00:78::1 and fd00:78::2) or IPv4
    /// (10.78.0.1 and 10.78.0.2).
    fn with(&mut self, ipv6: bool, f: impl FnOnce(&End, &End) -> Result) -> Result {
        let (a, b) = self.0.get(ipv6, |ipv6| {
            let gid = |last: u8| {
                if ipv6 {
                    let mut g = [0u8; 16];
                    g[0] = 0xfd;
                    g[3] = 0x78;
                    g[15] = last;
                    Gid(g)
                } else {
                    Gid::from_ipv4([10, 78, 0, last])
                }
            };
            let a = side(c_str!("rxa"), gid(1))?;
            Ok((a, side(c_str!("rxb"), gid(2))?))
        })?;
        f(a, b)
    }
}

const V4: bool = false;
const V6: bool = true;

const CASES: &[FnCase<Sides>] = &[
    case!("devices_active", |_| {
        devices_listed(&[c_str!("rxa"), c_str!("rxb")])
    }),
    case!("ud_a_to_b", |s| s.with(V4, one_way)),
    case!("ud_b_to_a", |s| s.with(V4, |a, b| one_way(b, a))),
    case!("too_long_and_wrong_qkey", |s| {
        s.with(V4, too_long_and_wrong_qkey)
    }),
    case!("loopback", |s| s.with(V4, |_, b| loopback(b))),
    case!("ud_ipv6_a_to_b", |s| s.with(V6, one_way)),
    case!("ud_ipv6_b_to_a", |s| s.with(V6, |a, b| one_way(b, a))),
    case!("gsi_qp1", |s| s.with(V4, gsi)),
    case!("gsi_qp1_ipv6", |s| s.with(V6, gsi)),
];

struct RxeUdTest;

impl kernel::Module for RxeUdTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut Sides(Fixture::new()))?;
        Ok(RxeUdTest)
    }
}
