// SPDX-License-Identifier: GPL-2.0

//! Selftest: UD SENDs between two `rdma_rs_rxe` devices on the wire.
//!
//! `ud.sh` makes `rxa` on 10.78.0.1 / fd00:78::1 and `rxb` on 10.78.0.2 /
//! fd00:78::2, each in its own network namespace, joined by a veth pair;
//! this module sends UD messages both ways, over IPv4 and IPv6, through the
//! verbs of `rdma_core` and checks every byte, the GRH, the source QP,
//! immediate data, an address handle made from the completion, and what
//! must not arrive; then the MAD layers of both devices talk through
//! agents (responses, retries, timeouts, unmatched requests) and the CMs
//! answer what no connection takes.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::{EAGAIN, EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::str::CStr;

use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::cm::counters::Group;
use rdma::device::{self, Device, DeviceRef};
use rdma::kshim::time;
use rdma::mad::agent::AgentCore;
use rdma::mad::{Agent, MadAddr, MadHandler, RecvMad, Retry, SendOpts, SendStatus};
use rdma::spec::attr::Gid;
use rdma::spec::cm_msg::{tcp_service_id, CmMessage, Dreq, Req};
use rdma::spec::mad::{
    Mad, MadHeader, CM_ATTR_DREP, CM_ATTR_DREQ, CM_ATTR_REJ, CM_ATTR_REQ, MAD_DATA_LEN,
    MAD_HDR_LEN, MAD_SIZE, METHOD_GET, METHOD_GET_RESP, METHOD_RESP, METHOD_SEND,
    STATUS_UNSUPPORTED_METHOD_ATTRIB,
};
use rdma::spec::opcodes::{Access, WcFlags, WcOpcode, WcStatus};
use rdma::spec::qp_state::{QpState, QpType};
use rdma::verbs::ah::AhAttr;
use rdma::verbs::cq::{Cq, CqCore};
use rdma::verbs::qp::{Qp, QpCap, QpInitAttr};
use rdma::verbs::srq::{Srq, SrqAttr};
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{RecvWr, SendOp, SendWr, UdDest};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, Fixture, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{End, Opts, Port};

#[path = "../../lib/verify.rs"]
mod verify;
use verify::Rng;

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
/// The GRH a UD receive gets ahead of the payload.
const GRH: usize = 40;

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
        time::msleep(2);
    }
    pr_err!("polled {} of {} completions\n", got.len(), n);
    Err(EAGAIN)
}

fn pattern(seed: u32, out: &mut [u8]) {
    Rng(seed | 1).fill(out);
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
    time::msleep(200);
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
    time::msleep(200);
    let mut wcs: [Wc; 1] = Default::default();
    check(
        b.cq.poll(&mut wcs) == 0,
        "nothing arrives with a wrong Q_Key",
    )
}

/// A UD SEND of `len` bytes from `a` to QP `qpn` on `b`'s address, with
/// its sender's completion checked.
fn send_to(a: &End, b: &End, qpn: u32, len: usize, wr_id: u64) -> Result {
    let ah = a.ah(b.gid)?;
    let sg = [a.buf.sge(0, len as u32, a.mr.lkey())?];
    let mut wr = SendWr::new(wr_id, SendOp::Send, &sg);
    wr.ud = Some(UdDest {
        ah: ah.core(),
        remote_qpn: qpn,
        remote_qkey: QKEY,
    });
    a.qp.post_send(&[wr]).map_err(|(_, e)| e)?;
    check(
        poll(&a.cq, 1, 2000)?[0].status == WcStatus::Success,
        "the sender completes",
    )
}

/// Datagrams longer than the receive posted, as the C rxe takes them: on
/// a QP's own receive queue the datagram is dropped, the receive stays
/// for the next one (which fits and arrives in it) and the QP stays in
/// RTS; through an SRQ the receive completes with REM_INV_REQ_ERR and the
/// QP stays in RTS, its next receive taking the next datagram. `ud.sh`
/// checks that `length_err` counted both.
fn too_long_for_recv(a: &End, b: &End) -> Result {
    // A receiving QP of its own: the fixture's may have receives posted
    // by the cases before.
    let b = &side(b.dev.name(), b.gid)?;
    // Room for the GRH and 64 bytes.
    let room = (GRH + 64) as u32;
    let rs = [b.buf.sge(0, room, b.mr.lkey())?];
    b.qp.post_recv(&[RecvWr {
        wr_id: 50,
        cqe: None,
        sg: &rs,
    }])
    .map_err(|(_, e)| e)?;
    send_to(a, b, b.qp.qpn(), 65, 51)?;
    time::msleep(200);
    let mut wcs: [Wc; 1] = Default::default();
    check(
        b.cq.poll(&mut wcs) == 0,
        "no completion for a datagram too long",
    )?;
    check(b.qp.state() == QpState::Rts, "the QP stays in RTS")?;
    send_to(a, b, b.qp.qpn(), 64, 52)?;
    let wc = &poll(&b.cq, 1, 2000)?[0];
    check(
        wc.wr_id == 50 && wc.status == WcStatus::Success && wc.byte_len == room,
        "the kept receive takes the next datagram",
    )?;
    // The same through an SRQ.
    let srq = Srq::create(
        b.pd.core(),
        &SrqAttr {
            max_wr: 8,
            max_sge: 1,
            srq_limit: 0,
        },
    )?;
    let cq = Cq::create(b.dev.arc(), 16, None)?;
    let q = Qp::create(
        b.pd.core(),
        &QpInitAttr {
            qp_type: QpType::Ud,
            send_cq: cq.core(),
            recv_cq: cq.core(),
            srq: Some(srq.core()),
            cap: OPTS.cap,
            sq_sig_all: true,
            port_num: 1,
        },
    )?;
    rc::modify_to(&q, &OPTS, &rc::Remote::default(), QpState::Rts)?;
    for i in 0..2u64 {
        let rs = [b.buf.sge(SLOT * (1 + i as usize), room, b.mr.lkey())?];
        srq.post_recv(&[RecvWr {
            wr_id: 60 + i,
            cqe: None,
            sg: &rs,
        }])
        .map_err(|(_, e)| e)?;
    }
    send_to(a, b, q.qpn(), 100, 53)?;
    let wc = &poll(cq.core(), 1, 2000)?[0];
    check(
        wc.wr_id == 60 && wc.status == WcStatus::RemInvReqErr,
        "an SRQ's receive completes with REM_INV_REQ_ERR",
    )?;
    check(q.state() == QpState::Rts, "the SRQ's QP stays in RTS")?;
    send_to(a, b, q.qpn(), 10, 54)?;
    let wc = &poll(cq.core(), 1, 2000)?[0];
    check(
        wc.wr_id == 61 && wc.status == WcStatus::Success && wc.byte_len == (GRH + 10) as u32,
        "the next SRQ receive takes the next datagram",
    )
}

/// A receive whose memory does not check out (a bad lkey): as the C rxe
/// (its malformed WQE, class A, for UD too), the receive completes with
/// LOC_QP_OP_ERR and the QP goes to the error state.
fn bad_recv_memory(a: &End, b: &End) -> Result {
    let b = &side(b.dev.name(), b.gid)?;
    let rs = [b.buf.sge(0, (GRH + 64) as u32, b.mr.lkey() ^ 0x80)?];
    b.qp.post_recv(&[RecvWr {
        wr_id: 70,
        cqe: None,
        sg: &rs,
    }])
    .map_err(|(_, e)| e)?;
    send_to(a, b, b.qp.qpn(), 64, 71)?;
    let wc = &poll(&b.cq, 1, 2000)?[0];
    check(
        wc.wr_id == 70 && wc.status == WcStatus::LocQpOpErr,
        "the receive completes with LOC_QP_OP_ERR",
    )?;
    check(b.qp.state() == QpState::Err, "the QP in error")
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

/// A test agent's record of what its handler saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// A MAD arrived: its header, the sender's QPN, what it answers, and
    /// whether its data is the pattern of the seed in its attribute
    /// modifier (inverted for a response).
    Recv {
        hdr: MadHeader,
        src_qp: u32,
        response_to: Option<u64>,
        data_ok: bool,
    },
    /// A send ended.
    Done(u64, SendStatus),
}

/// A test agent's handler: records everything; answers a GET whose
/// attribute ID is not [`IGNORED_ATTR`] with a GET_RESP carrying the data
/// inverted.
#[pin_data]
struct Recorder {
    #[pin]
    seen: Mutex<KVec<Seen>>,
}

/// GETs of this attribute go unanswered (the timeout case).
const IGNORED_ATTR: u16 = 0xdead;
/// The management classes of the test (vendor range 1).
const TEST_CLASS: u8 = 0x0a;
const OTHER_CLASS: u8 = 0x0b;

/// The data area of a test MAD: a pattern of `seed`.
fn mad_data(seed: u32) -> [u8; MAD_DATA_LEN] {
    let mut d = [0u8; MAD_DATA_LEN];
    pattern(seed, &mut d);
    d
}

impl MadHandler for Recorder {
    fn recv(&self, agent: &AgentCore, mad: &RecvMad) {
        let seed = mad.hdr.attr_mod;
        let mut want = mad_data(seed);
        if mad.hdr.method & METHOD_RESP != 0 {
            want.iter_mut().for_each(|b| *b = !*b);
        }
        let data_ok = mad.data[MAD_HDR_LEN..] == want[..];
        let _ = self.seen.lock().push(
            Seen::Recv {
                hdr: mad.hdr,
                src_qp: mad.addr.remote_qpn,
                response_to: mad.response_to,
                data_ok,
            },
            GFP_KERNEL,
        );
        if mad.hdr.method == METHOD_GET && mad.hdr.attr_id != IGNORED_ATTR {
            let hdr = MadHeader {
                method: METHOD_GET_RESP,
                ..mad.hdr
            };
            let mut data = mad_data(seed);
            data.iter_mut().for_each(|b| *b = !*b);
            let mut out = [0u8; MAD_SIZE];
            if Mad::write(&hdr, &data, &mut out).is_ok() {
                let _ = agent.send(&mad.addr, &out, SendOpts::default());
            }
        }
    }

    fn send_done(&self, _agent: &AgentCore, cookie: u64, status: SendStatus) {
        let _ = self
            .seen
            .lock()
            .push(Seen::Done(cookie, status), GFP_KERNEL);
    }
}

impl Recorder {
    fn new() -> Result<Arc<Recorder>> {
        Arc::pin_init(
            pin_init!(Recorder {
                seen <- new_mutex!(KVec::new(), "Recorder::seen"),
            }),
            GFP_KERNEL,
        )
    }

    /// Waits until `pred` holds of what was seen (or 20 s pass).
    fn wait(&self, what: &str, pred: impl Fn(&[Seen]) -> bool) -> Result {
        for _ in 0..2000 {
            if pred(&self.seen.lock()) {
                return Ok(());
            }
            time::msleep(10);
        }
        pr_err!(
            "waited in vain for {}: saw {:?}\n",
            what,
            &self.seen.lock()[..]
        );
        Err(EAGAIN)
    }

    fn take(&self) -> KVec<Seen> {
        core::mem::take(&mut *self.seen.lock())
    }
}

/// A MAD of `class` with `method`, `attr_id`, transaction ID `tid` and
/// the data of `seed` (also in the attribute modifier).
fn test_mad(class: u8, method: u8, attr_id: u16, tid: u64, seed: u32) -> Result<[u8; MAD_SIZE]> {
    let hdr = MadHeader {
        base_version: 1,
        mgmt_class: class,
        class_version: 1,
        method,
        tid,
        attr_id,
        attr_mod: seed,
        ..MadHeader::default()
    };
    let mut out = [0u8; MAD_SIZE];
    Mad::write(&hdr, &mad_data(seed), &mut out).map_err(|_| EINVAL)?;
    Ok(out)
}

/// The address of the other device's QP1.
fn qp1_of(from: &End, to: &End) -> Result<MadAddr> {
    Ok(MadAddr {
        ah: from.av(to.gid)?,
        remote_qpn: 1,
        pkey_index: 0,
    })
}

/// A MAD counter of `dev` port 1.
fn mad_counter(dev: &Device, name: &str) -> u64 {
    rdma::mad::port::counters(dev, 1)
        .and_then(|c| c.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
        .unwrap_or(u64::MAX)
}

/// The core owns QP1 of every rxe port: a ULP's GSI QP is refused, and
/// a second agent for a class and version taken is refused.
fn gsi_owned_by_core(a: &End, _b: &End) -> Result {
    let o = Opts {
        qp_type: QpType::Gsi,
        qkey: 0x8001_0000,
        ..OPTS
    };
    check(
        End::new(
            Port {
                name: c_str!("rxa"),
                gid: a.gid,
            },
            &o,
        )
        .is_err(),
        "a ULP's GSI QP refused: the core has it",
    )?;
    let r = Recorder::new()?;
    let _one = Agent::register(&a.dev, 1, TEST_CLASS, 1, r.clone())?;
    check(
        Agent::register(&a.dev, 1, TEST_CLASS, 1, r.clone()).is_err(),
        "one agent per class and version",
    )?;
    check(
        Agent::register(&a.dev, 2, TEST_CLASS, 1, r).is_err(),
        "no port 2",
    )
}

/// Through the MAD layers of both devices: a GET with retries gets its
/// GET_RESP from the other side's agent (the data inverted, the request's
/// cookie given back, then `Responded`); a SEND without a response ends
/// with `Sent` and arrives once; a GET of a class nobody on the other side
/// has is answered by that side's MAD layer with status "unsupported"; a
/// GET the other agent ignores is sent 1 + 2 times and times out; the
/// counters of both sides say so.
fn mad_agents(a: &End, b: &End) -> Result {
    let (ra, rb) = (Recorder::new()?, Recorder::new()?);
    let ga = Agent::register(&a.dev, 1, TEST_CLASS, 1, ra.clone())?;
    let _gb = Agent::register(&b.dev, 1, TEST_CLASS, 1, rb.clone())?;
    let to_b = qp1_of(a, b)?;
    let (tx0, rx0) = (mad_counter(&a.dev, "tx"), mad_counter(&b.dev, "rx"));

    // GET, answered.
    let tid = ga.new_tid();
    let get = test_mad(TEST_CLASS, METHOD_GET, 0x10, tid, 5)?;
    let retry = Some(Retry {
        timeout_ms: 2000,
        retries: 3,
    });
    ga.send(&to_b, &get, SendOpts { cookie: 41, retry })?;
    ra.wait("the GET's end", |s| {
        s.contains(&Seen::Done(41, SendStatus::Responded))
    })?;
    let seen = ra.take();
    let resp = seen.iter().find_map(|x| match x {
        Seen::Recv {
            hdr,
            src_qp,
            response_to,
            data_ok,
        } => Some((*hdr, *src_qp, *response_to, *data_ok)),
        _ => None,
    });
    let Some((hdr, src_qp, response_to, data_ok)) = resp else {
        return check(false, "a response");
    };
    check(
        hdr.method == METHOD_GET_RESP && hdr.tid == tid && src_qp == 1,
        "GET_RESP from QP1 with the GET's transaction ID",
    )?;
    check(
        response_to == Some(41) && data_ok,
        "the cookie back, the data inverted",
    )?;
    check(seen.len() == 2, "one response, one end")?;
    // The answer's own send completion may be handled after the answer
    // arrived here.
    rb.wait("the answer's end", |s| s.len() >= 2)?;
    let got = rb.take();
    check(
        got.len() == 2
            && matches!(got[0], Seen::Recv { hdr, src_qp: 1, response_to: None, data_ok: true }
                if hdr.tid == tid && hdr.method == METHOD_GET)
            && matches!(got[1], Seen::Done(0, SendStatus::Sent)),
        "the other side saw the GET once and sent its answer",
    )?;

    // SEND, no response expected.
    let tid2 = ga.new_tid();
    let send = test_mad(TEST_CLASS, METHOD_SEND, 0x11, tid2, 6)?;
    ga.send(
        &to_b,
        &send,
        SendOpts {
            cookie: 42,
            retry: None,
        },
    )?;
    ra.wait("the SEND's end", |s| {
        s.contains(&Seen::Done(42, SendStatus::Sent))
    })?;
    rb.wait("the SEND", |s| !s.is_empty())?;
    check(
        matches!(rb.take()[..], [Seen::Recv { hdr, response_to: None, data_ok: true, .. }]
            if hdr.tid == tid2 && hdr.method == METHOD_SEND),
        "the SEND arrived once, intact",
    )?;
    check(ra.take().len() == 1, "nothing else on the sender")?;

    // GET of a class the other side has no agent for.
    let unm0 = mad_counter(&b.dev, "rx_unmatched");
    let tid3 = ga.new_tid();
    let other = test_mad(OTHER_CLASS, METHOD_GET, 0x12, tid3, 7)?;
    ga.send(&to_b, &other, SendOpts { cookie: 43, retry })?;
    ra.wait("the unsupported GET's end", |s| {
        s.contains(&Seen::Done(43, SendStatus::Responded))
    })?;
    check(
        ra.take().iter().any(|x| {
            matches!(x, Seen::Recv { hdr, response_to: Some(43), .. }
            if hdr.status == STATUS_UNSUPPORTED_METHOD_ATTRIB && hdr.method == METHOD_GET_RESP
                && hdr.mgmt_class == OTHER_CLASS && hdr.tid == tid3)
        }),
        "the other MAD layer answered: unsupported",
    )?;
    check(
        mad_counter(&b.dev, "rx_unmatched") == unm0 + 1,
        "counted as unmatched",
    )?;

    // GET the other agent ignores: 1 + 2 sends, then TimedOut.
    let (re0, to0) = (
        mad_counter(&a.dev, "retries"),
        mad_counter(&a.dev, "timeouts"),
    );
    let tid4 = ga.new_tid();
    let ignored = test_mad(TEST_CLASS, METHOD_GET, IGNORED_ATTR, tid4, 8)?;
    ga.send(
        &to_b,
        &ignored,
        SendOpts {
            cookie: 44,
            retry: Some(Retry {
                timeout_ms: 300,
                retries: 2,
            }),
        },
    )?;
    ra.wait("the timeout", |s| {
        s.contains(&Seen::Done(44, SendStatus::TimedOut))
    })?;
    check(ra.take().len() == 1, "no response, one end")?;
    rb.wait("the three copies", |s| s.len() >= 3)?;
    let copies = rb.take();
    check(
        copies.len() == 3
            && copies
                .iter()
                .all(|x| matches!(x, Seen::Recv { hdr, .. } if hdr.tid == tid4)),
        "sent three times with the same transaction ID",
    )?;
    check(
        mad_counter(&a.dev, "retries") == re0 + 2 && mad_counter(&a.dev, "timeouts") == to0 + 1,
        "two retries and a timeout counted",
    )?;
    // Sent: GET, SEND, the other class's GET, the ignored GET three
    // times; received by the agent: all but the other class's.
    let counted = || (mad_counter(&a.dev, "tx"), mad_counter(&b.dev, "rx"));
    for _ in 0..500 {
        if counted() == (tx0 + 6, rx0 + 5) {
            break;
        }
        time::msleep(10);
    }
    let (tx, rx) = counted();
    if tx != tx0 + 6 || rx != rx0 + 5 {
        pr_err!("tx {} -> {}, rx {} -> {}\n", tx0, tx, rx0, rx);
    }
    check(tx == tx0 + 6 && rx == rx0 + 5, "sent and received counted")?;
    // A late answer to a request that ended is not delivered.
    check(!ga.cancel(tid4), "nothing left to cancel")
}

/// The count of CM message `attr` in `group` on `dev` port 1.
fn cm_count(dev: &Device, group: Group, attr: u16) -> u64 {
    rdma::cm::port::counters(dev, 1).map_or(u64::MAX, |c| c.get(group, attr))
}

/// The core's CM on both devices answers what no connection takes: a REQ
/// for a service nobody listens on gets a REJ, a DREQ for an unknown
/// connection a DREP; the REJ and the DREP reach the first CM, which
/// drops them; each CM counts what it sent and received.
fn cm_unknown(a: &End, b: &End) -> Result {
    let r = Recorder::new()?;
    let ga = Agent::register(&a.dev, 1, TEST_CLASS, 1, r.clone())?;
    let to_b = qp1_of(a, b)?;
    let (req, rej, dreq, drep) = (CM_ATTR_REQ, CM_ATTR_REJ, CM_ATTR_DREQ, CM_ATTR_DREP);
    let a0 = [
        cm_count(&a.dev, Group::RxMsgs, rej),
        cm_count(&a.dev, Group::RxMsgs, drep),
    ];
    let b0 = [
        cm_count(&b.dev, Group::RxMsgs, req),
        cm_count(&b.dev, Group::TxMsgs, rej),
        cm_count(&b.dev, Group::RxMsgs, dreq),
        cm_count(&b.dev, Group::TxMsgs, drep),
    ];
    let msg = CmMessage::Req(Req {
        local_comm_id: 0x1234,
        service_id: tcp_service_id(7777),
        local_qpn: 0x55,
        max_cm_retries: 15,
        ..Req::default()
    });
    let mut out = [0u8; MAD_SIZE];
    msg.write_mad(ga.new_tid(), 0, &mut out)
        .map_err(|_| EINVAL)?;
    ga.send(&to_b, &out, SendOpts::default())?;
    let msg = CmMessage::Dreq(Dreq {
        local_comm_id: 0x1234,
        remote_comm_id: 0x9999,
        remote_qpn_eecn: 0x66,
        ..Dreq::default()
    });
    msg.write_mad(ga.new_tid(), 0, &mut out)
        .map_err(|_| EINVAL)?;
    ga.send(&to_b, &out, SendOpts::default())?;
    for _ in 0..2000 {
        if cm_count(&a.dev, Group::RxMsgs, rej) > a0[0]
            && cm_count(&a.dev, Group::RxMsgs, drep) > a0[1]
        {
            break;
        }
        time::msleep(10);
    }
    check(
        cm_count(&b.dev, Group::RxMsgs, req) == b0[0] + 1
            && cm_count(&b.dev, Group::TxMsgs, rej) == b0[1] + 1,
        "REQ received, REJ sent",
    )?;
    check(
        cm_count(&b.dev, Group::RxMsgs, dreq) == b0[2] + 1
            && cm_count(&b.dev, Group::TxMsgs, drep) == b0[3] + 1,
        "DREQ received, DREP sent",
    )?;
    check(
        cm_count(&a.dev, Group::RxMsgs, rej) == a0[0] + 1
            && cm_count(&a.dev, Group::RxMsgs, drep) == a0[1] + 1,
        "REJ and DREP back at the first CM",
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
    case!("too_long_for_recv", |s| s.with(V4, too_long_for_recv)),
    case!("bad_recv_memory", |s| s.with(V4, bad_recv_memory)),
    case!("loopback", |s| s.with(V4, |_, b| loopback(b))),
    case!("ud_ipv6_a_to_b", |s| s.with(V6, one_way)),
    case!("ud_ipv6_b_to_a", |s| s.with(V6, |a, b| one_way(b, a))),
    case!("gsi_owned_by_core", |s| s.with(V4, gsi_owned_by_core)),
    case!("mad_agents", |s| s.with(V4, mad_agents)),
    case!("mad_agents_ipv6", |s| s.with(V6, mad_agents)),
    case!("cm_unknown", |s| s.with(V4, cm_unknown)),
];

struct RxeUdTest;

impl kernel::Module for RxeUdTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut Sides(Fixture::new()))?;
        Ok(RxeUdTest)
    }
}
