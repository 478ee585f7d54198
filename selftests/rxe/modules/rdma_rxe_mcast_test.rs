// SPDX-License-Identifier: GPL-2.0

//! Selftest: UD multicast on `rdma_rs_rxe` devices.
//!
//! `mcast.sh` makes `rxa` (10.78.6.1, fd00:7c::1) and `rxb` (10.78.6.2,
//! fd00:7c::2) in two namespaces joined by a veth pair. For an IPv4 group
//! (239.1.2.3, IPv4-mapped) and an IPv6 one (ff0e::7c:1), two UD QPs on
//! each device are attached; a QP of `rxa` that is not sends datagrams to
//! QPN 0xFFFFFF, and each attached QP gets a copy of each (the ones on
//! `rxa` by the IP stack's multicast loopback, the ones on `rxb` from the
//! wire), intact, with the sender's QPN; a QP that detaches gets no more.
//! The limits are the advertised ones; attaching to a unicast GID is
//! refused. The module keeps one QP per device attached to the IPv4 group
//! until it is unloaded, so the script sees the IP membership on both
//! netdevs while it is loaded, and gone after.

#![forbid(unsafe_code)]

use kernel::error::code::{EINVAL, ENOMEM};
use kernel::prelude::*;

use rdma::spec::attr::Gid;
use rdma::spec::opcodes::{Access, WcFlags, WcOpcode, WcStatus};
use rdma::spec::qp_state::QpType;
use rdma::verbs::qp::QpCap;
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{RecvWr, SendOp, SendWr, UdDest};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{End, Opts, Port, RxePair};

#[path = "../../lib/verify.rs"]
mod verify;
use verify::{fill_pattern, poll, quiet, same};

module! {
    type: RxeMcastTest,
    name: "rdma_rxe_mcast_test",
    author: "rdma-rs developers",
    description: "Selftest: UD multicast on rdma_rs_rxe devices",
    license: "GPL",
}

const QKEY: u32 = 0x0c0f_fee0;
const LEN: usize = 700;
const SLOT: usize = 1024;
const SLOTS: usize = 16;
/// The multicast QPN.
const MCAST_QPN: u32 = 0xff_ffff;

const UD: Opts = Opts {
    qp_type: QpType::Ud,
    mr_access: Access::LOCAL_WRITE,
    buf_len: SLOT * SLOTS,
    cqe: 64,
    cap: QpCap {
        max_send_wr: 16,
        max_recv_wr: SLOTS as u32,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    },
    sq_sig_all: true,
    qkey: QKEY,
    ..rc::RC
};

fn group_v6() -> Gid {
    let mut g = [0u8; 16];
    g[0] = 0xff;
    g[1] = 0x0e;
    g[13] = 0x7c;
    g[15] = 1;
    Gid(g)
}

fn ud_end(p: Port<'_>) -> Result<End> {
    let e = End::new(p, &UD)?;
    e.ready()?;
    for i in 0..SLOTS {
        let sg = [e.buf.sge(i * SLOT, SLOT as u32, e.mr.lkey())?];
        e.qp.post_recv(&[RecvWr {
            wr_id: i as u64,
            cqe: None,
            sg: &sg,
        }])
        .map_err(|(_, e)| e)?;
    }
    Ok(e)
}

/// Sends datagram `k` (its pattern) from `s` to `group`.
fn send(s: &End, group: Gid, k: u32) -> Result {
    let ah = s.ah(group)?;
    let at = (k as usize % SLOTS) * SLOT;
    fill_pattern(&s.buf, at, LEN, 100 + k)?;
    let sg = [s.buf.sge(at, LEN as u32, s.mr.lkey())?];
    let mut wr = SendWr::new(u64::from(k), SendOp::SendWithImm(k), &sg);
    wr.ud = Some(UdDest {
        ah: ah.core(),
        remote_qpn: MCAST_QPN,
        remote_qkey: QKEY,
    });
    s.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
    let c = poll(&s.cq, 1)?;
    check(c[0].status == WcStatus::Success, "multicast send completes")
}

/// `r` receives datagram `k` from `s`, intact.
fn received(r: &End, s: &End, k: u32) -> Result {
    let wc = poll(r.recv_cq(), 1)?;
    let wc: &Wc = &wc[0];
    check(
        wc.status == WcStatus::Success && wc.opcode == WcOpcode::Recv,
        "a receive",
    )?;
    check(wc.byte_len as usize == LEN + 40, "length with the GRH")?;
    check(wc.src_qp == s.qp.qpn(), "the sender's QPN")?;
    check(
        wc.wc_flags.contains(WcFlags::WITH_IMM) && wc.imm_data == k,
        "the datagram's number",
    )?;
    let at = wc.wr_id as usize * SLOT + 40;
    let want = rdma::kshim::mem::Buffer::new(LEN)?;
    fill_pattern(&want, 0, LEN, 100 + k)?;
    check(same(&r.buf, at, &want, 0, LEN)?, "payload intact")
}

/// Fan-out to two QPs on each device, then one detaches.
fn fanout(p: &Ports, v6_group: bool) -> Result {
    let (a, b, group) = if v6_group {
        (p.a6, p.b6, group_v6())
    } else {
        (p.a, p.b, Gid::from_ipv4([239, 1, 2, 3]))
    };
    let s = ud_end(a)?;
    let rs = [ud_end(a)?, ud_end(a)?, ud_end(b)?, ud_end(b)?];
    for r in rs.iter() {
        r.qp.attach_mcast(&group)?;
    }
    for k in 0..3 {
        send(&s, group, k)?;
        for r in rs.iter() {
            received(r, &s, k)?;
        }
    }
    // The sender is not attached: it gets nothing.
    quiet(s.recv_cq(), 300)?;
    rs[1].qp.detach_mcast(&group)?;
    rs[3].qp.detach_mcast(&group)?;
    check(
        rs[3].qp.detach_mcast(&group) == Err(EINVAL),
        "detaching twice is EINVAL",
    )?;
    send(&s, group, 3)?;
    received(&rs[0], &s, 3)?;
    received(&rs[2], &s, 3)?;
    quiet(rs[1].recv_cq(), 300)?;
    quiet(rs[3].recv_cq(), 300)
}

/// Attaching: a unicast GID is refused; one group holds as many QPs as
/// advertised and no more.
fn limits(p: &Ports) -> Result {
    let attr = *ud_end(p.a)?.dev.attr();
    check(
        attr.max_mcast_qp_attach == 56 && attr.max_mcast_grp == 8192,
        "the C rxe's limits advertised",
    )?;
    let e = ud_end(p.a)?;
    check(
        e.qp.attach_mcast(&Gid::from_ipv4([10, 78, 6, 9])) == Err(EINVAL),
        "a unicast GID is no group",
    )?;
    let group = Gid::from_ipv4([239, 9, 9, 9]);
    let mut qps = KVec::new();
    for _ in 0..attr.max_mcast_qp_attach {
        let e = End::new(p.a, &UD)?;
        e.qp.attach_mcast(&group)?;
        qps.push(e, GFP_KERNEL)?;
    }
    let extra = End::new(p.a, &UD)?;
    check(
        extra.qp.attach_mcast(&group) == Err(ENOMEM),
        "one QP more than a group holds",
    )?;
    Ok(())
}

/// Leaves one QP per device in the IPv4 group for the script to see.
fn stay(p: &mut Ports) -> Result {
    let group = Gid::from_ipv4([239, 1, 2, 3]);
    for port in [p.a, p.b] {
        let e = End::new(port, &UD)?;
        e.qp.attach_mcast(&group)?;
        p.kept.push(e, GFP_KERNEL)?;
    }
    pr_info!("mcast: attached, leaving them for the script\n");
    Ok(())
}

struct Ports {
    a: Port<'static>,
    b: Port<'static>,
    a6: Port<'static>,
    b6: Port<'static>,
    kept: KVec<End>,
}

const CASES: &[FnCase<Ports>] = &[
    case!("fanout_ipv4_and_detach", |p| fanout(p, false)),
    case!("fanout_ipv6_and_detach", |p| fanout(p, true)),
    case!("limits", |p| limits(p)),
    case!("attached_until_unload", |p| stay(p)),
];

struct RxeMcastTest {
    _kept: KVec<End>,
}

impl kernel::Module for RxeMcastTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let (v4, v6) = (RxePair::ipv4(6), RxePair::ipv6(0x7c));
        let mut ports = Ports {
            a: v4.a,
            b: v4.b,
            a6: v6.a,
            b6: v6.b,
            kept: KVec::new(),
        };
        ktap::run(CASES, &mut ports)?;
        Ok(RxeMcastTest { _kept: ports.kept })
    }
}
