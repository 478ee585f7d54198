// SPDX-License-Identifier: GPL-2.0

//! Selftest: our rxe against the kernel's own `rdma_rxe`, on the wire.
//!
//! `interop.sh` binds our device `rxi` to `iv1` (10.82.0.2) in namespace
//! `iopx` and the kernel's `cxi` to the other end of the veth pair, `iv0`
//! (10.82.0.1), in the initial namespace. This module makes an endpoint on
//! each (ours through `rdma_core`, theirs through the C module `rxe_cpeer`
//! on the kernel's verbs) and runs RC SEND, SEND with immediate, RDMA WRITE,
//! WRITE with immediate, RDMA READ and both atomics, and UD SEND with and
//! without immediate, in both directions: data byte for byte (and the
//! bytes past it untouched), completions on both sides (status, opcode,
//! length, immediate, source QP).
//!
//! Tag matching (`tm_from_c_rxe`): the kernel's rxe sends tagged messages
//! (two eager ones, of one packet and of three, and a rendezvous of 64
//! KiB) to our RC QP of a TM SRQ (`tm.rs`): they match, land without
//! their headers, and our rendezvous READ reads the C side's buffer and
//! our FIN reaches its receive. Its mirror (`tm_mirror`) puts the same
//! packets on the wire the other way with plain verbs (SENDs of the
//! messages' sizes from ours, a 64 KiB READ and a 32-byte SEND from
//! theirs), so that the capture has both stacks' shapes of them.

#![deny(unsafe_code)]

use kernel::c_str;
use kernel::error::code::EINVAL;
use kernel::fmt;
use kernel::prelude::*;
use kernel::str::CString;

use rdma::spec::attr::{Gid, Mtu};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{check, Case, Fixture};

#[path = "../../lib/rc.rs"]
mod rc;
#[path = "../../lib/verify.rs"]
mod verify;

#[allow(dead_code)]
mod peer;
// The C test peer's binding: the one module with `unsafe`.
mod cpeer_sys;
mod tm;
use peer::{wait, wc_op, Completion, Endpoint, Info, Op, Ours, Theirs, Wr, WC_IMM, WC_INV};

module! {
    type: RxeInteropTest,
    name: "rdma_rxe_interop_test",
    author: "rdma-rs developers",
    description: "Selftest: rdma_rs_rxe against the kernel's rdma_rxe",
    license: "GPL",
}

const LEN: usize = 256 * 1024;
/// Where the responder's side of every case lies in its buffer.
const TARGET: usize = 128 * 1024;
/// What untouched bytes hold.
const FILLER: u8 = 0xee;
/// PSNs close below the 24-bit wrap, so that every case crosses it.
const PSN_OURS: u32 = 0xff_fff0;
const PSN_THEIRS: u32 = 0xff_ffe0;
/// The UD receive buffer holds the 40-byte GRH, then the payload.
const GRH: usize = 40;
const MS: u32 = 5000;

fn ours_gid() -> Gid {
    Gid::from_ipv4([10, 82, 0, 2])
}

fn their_gid() -> Gid {
    Gid::from_ipv4([10, 82, 0, 1])
}

/// Byte `i` of the pattern of `seed`.
fn pattern_byte(i: usize, seed: u8) -> u8 {
    (i as u8).wrapping_mul(29).wrapping_add(seed) ^ ((i >> 8) as u8)
}

fn fill_pattern(e: &dyn Endpoint, offset: usize, len: usize, seed: u8) -> Result {
    let mut chunk = [0u8; 512];
    let mut done = 0;
    while done < len {
        let n = chunk.len().min(len - done);
        for (k, b) in chunk[..n].iter_mut().enumerate() {
            *b = pattern_byte(done + k, seed);
        }
        e.write(offset + done, &chunk[..n])?;
        done += n;
    }
    Ok(())
}

fn fill(e: &dyn Endpoint, offset: usize, len: usize, byte: u8) -> Result {
    let chunk = [byte; 512];
    let mut done = 0;
    while done < len {
        let n = chunk.len().min(len - done);
        e.write(offset + done, &chunk[..n])?;
        done += n;
    }
    Ok(())
}

/// `len` bytes at `offset` hold the pattern of `seed`, and the 64 after
/// them still hold the filler.
fn holds_pattern(e: &dyn Endpoint, offset: usize, len: usize, seed: u8) -> Result {
    let mut chunk = [0u8; 512];
    let mut done = 0;
    while done < len {
        let n = chunk.len().min(len - done);
        e.read(offset + done, &mut chunk[..n])?;
        for (k, b) in chunk[..n].iter().enumerate() {
            if *b != pattern_byte(done + k, seed) {
                pr_err!(
                    "byte {} of {}: {:#x}, want {:#x}\n",
                    done + k,
                    len,
                    b,
                    pattern_byte(done + k, seed)
                );
                return Err(EINVAL);
            }
        }
        done += n;
    }
    let mut after = [0u8; 64];
    e.read(offset + len, &mut after)?;
    check(
        after.iter().all(|b| *b == FILLER),
        "bytes past the data untouched",
    )
}

fn expect(c: &Completion, wr_id: u64, opcode: u32, what: &str) -> Result {
    if c.status != 0 || c.wr_id != wr_id || c.opcode != opcode {
        pr_err!(
            "{}: completion {:?}, want wr_id {} opcode {}\n",
            what,
            c,
            wr_id,
            opcode
        );
        return Err(EINVAL);
    }
    Ok(())
}

/// One RC SEND, WRITE or READ of `len` bytes from `req` to `resp`.
fn rc_transfer(
    req: &dyn Endpoint,
    resp: &dyn Endpoint,
    op: Op,
    len: usize,
    no_key: bool,
    seed: u8,
) -> Result {
    let peer = resp.info();
    let imm = 0x5eed_0000 | seed as u32;
    let (src, dst, src_off, dst_off) = if op == Op::Read {
        (resp, req, 0, TARGET)
    } else {
        (req, resp, 0, TARGET)
    };
    fill_pattern(src, src_off, len, seed)?;
    fill(dst, dst_off, len + 64, FILLER)?;
    let remote = matches!(op, Op::Send | Op::SendImm | Op::WriteImm);
    if remote {
        resp.post_recv(70 + seed as u64, TARGET as u32, (len + 64) as u32)?;
    }
    let local = if op == Op::Read { TARGET } else { 0 };
    let remote_off = if op == Op::Read { 0 } else { TARGET as u64 };
    let mut wr = Wr::new(seed as u64, op, local as u32, len as u32).to(&peer, remote_off);
    wr.imm = imm;
    if no_key {
        wr.rkey = 0;
        wr.remote_addr = 0;
    }
    req.post_send(&wr)?;
    let want = match op {
        Op::Send | Op::SendImm => wc_op::SEND,
        Op::Write | Op::WriteImm => wc_op::WRITE,
        _ => wc_op::READ,
    };
    let c = wait(req, false, MS)?;
    expect(&c, seed as u64, want, "requester")?;
    if op == Op::Read {
        check(c.byte_len as usize == len, "READ completion length")?;
    }
    if remote {
        let c = wait(resp, true, MS)?;
        let want = if op == Op::WriteImm {
            wc_op::RECV_RDMA_IMM
        } else {
            wc_op::RECV
        };
        expect(&c, 70 + seed as u64, want, "responder")?;
        if op == Op::Send || op == Op::SendImm {
            check(c.byte_len as usize == len, "receive length")?;
        }
        let with_imm = op != Op::Send;
        check((c.flags == WC_IMM) == with_imm, "immediate flag")?;
        if with_imm {
            check(c.imm == imm, "immediate data")?;
        }
    }
    holds_pattern(dst, dst_off, len, seed)
}

/// Compare and swap (taken and not taken) and fetch and add, from `req`
/// on the u64 at `resp`'s target.
fn rc_atomics(req: &dyn Endpoint, resp: &dyn Endpoint) -> Result {
    let peer = resp.info();
    resp.write(TARGET, &100u64.to_ne_bytes())?;
    let cases = [
        (Op::CmpSwap, 100, 555, 100u64, 555u64),
        (Op::CmpSwap, 1, 9, 555, 555),
        (Op::FetchAdd, 45, 0, 555, 600),
    ];
    for (i, (op, compare_add, swap, orig, after)) in cases.into_iter().enumerate() {
        req.write(64, &[0u8; 8])?;
        let mut wr = Wr::new(i as u64, op, 64, 8).to(&peer, TARGET as u64);
        wr.compare_add = compare_add;
        wr.swap = swap;
        req.post_send(&wr)?;
        let want = if op == Op::CmpSwap {
            wc_op::CMP_SWAP
        } else {
            wc_op::FETCH_ADD
        };
        expect(&wait(req, false, MS)?, i as u64, want, "atomic")?;
        let mut got = [0u8; 8];
        req.read(64, &mut got)?;
        check(u64::from_ne_bytes(got) == orig, "original value returned")?;
        resp.read(TARGET, &mut got)?;
        check(u64::from_ne_bytes(got) == after, "target after the atomic")?;
    }
    Ok(())
}

/// ATOMIC_WRITE of 8 bytes from `req` to the u64 at `resp`'s target, twice
/// (the second over the first).
fn rc_atomic_write(req: &dyn Endpoint, resp: &dyn Endpoint) -> Result {
    let peer = resp.info();
    resp.write(TARGET, &1u64.to_ne_bytes())?;
    for (i, value) in [0x0123_4567_89ab_cdefu64, 0xfeed_f00d_0000_0042]
        .into_iter()
        .enumerate()
    {
        req.write(64, &value.to_ne_bytes())?;
        req.post_send(&Wr::new(20 + i as u64, Op::AtomicWrite, 64, 8).to(&peer, TARGET as u64))?;
        expect(
            &wait(req, false, MS)?,
            20 + i as u64,
            wc_op::ATOMIC_WRITE,
            "ATOMIC_WRITE",
        )?;
        let mut got = [0u8; 8];
        resp.read(TARGET, &mut got)?;
        check(
            u64::from_ne_bytes(got) == value,
            "target after the ATOMIC_WRITE",
        )?;
    }
    Ok(())
}

/// One UD SEND of `len` bytes from `req` to `resp`.
fn ud_send(req: &dyn Endpoint, resp: &dyn Endpoint, imm: bool, len: usize, seed: u8) -> Result {
    fill_pattern(req, 0, len, seed)?;
    fill(resp, TARGET, GRH + len + 64, FILLER)?;
    resp.post_recv(90, TARGET as u32, (GRH + len + 64) as u32)?;
    let op = if imm { Op::SendImm } else { Op::Send };
    let mut wr = Wr::new(91, op, 0, len as u32);
    wr.imm = 0xabcd_0000 | seed as u32;
    req.post_send(&wr)?;
    expect(&wait(req, false, MS)?, 91, wc_op::SEND, "UD sender")?;
    let c = wait(resp, true, MS)?;
    expect(&c, 90, wc_op::RECV, "UD receiver")?;
    check(
        c.byte_len as usize == GRH + len,
        "UD receive length counts the GRH",
    )?;
    check(c.src_qp == req.info().qpn, "source QP")?;
    check((c.flags == WC_IMM) == imm, "immediate flag")?;
    if imm {
        check(c.imm == wr.imm, "immediate data")?;
    }
    holds_pattern(resp, TARGET + GRH, len, seed)
}

/// `enum ib_wc_status`: a remote access error.
const REM_ACCESS_ERR: u32 = 10;

/// A WRITE of 64 bytes from `req` to (`addr`, `rkey`): its status.
fn write_status(req: &dyn Endpoint, addr: u64, rkey: u32, wr_id: u64) -> Result<u32> {
    let mut wr = Wr::new(wr_id, Op::Write, 0, 64);
    wr.remote_addr = addr;
    wr.rkey = rkey;
    req.post_send(&wr)?;
    let c = wait(req, false, MS)?;
    check(c.wr_id == wr_id, "the WRITE's completion")?;
    Ok(c.status)
}

/// The invalidations, each on a fresh RC pair (the QP of a failed access
/// goes to the error state): SEND with invalidate of the responder's key,
/// READ with invalidate of the requester's own key (ours only: the kernel's
/// rxe of 6.12 cannot send it), and LOCAL_INV, each followed by an access
/// under the dead key that must fail. `ours_req`: our endpoint is the
/// requester.
fn rc_invalidate(what: Inval, ours_req: bool) -> Result {
    let mut p = pair(false)?;
    // The key to kill, on the side that owns it, and its address.
    let owner_ours = match what {
        Inval::Send => !ours_req,
        Inval::Read | Inval::Local => ours_req,
    };
    let (addr, key) = if owner_ours {
        p.ours.fast_reg()?
    } else {
        let i = p.theirs.info();
        (i.addr, i.rkey)
    };
    let (req, resp): (&dyn Endpoint, &dyn Endpoint) = if ours_req {
        (&p.ours, &p.theirs)
    } else {
        (&p.theirs, &p.ours)
    };
    // The other side (the one that does not own the key).
    let other: &dyn Endpoint = if owner_ours { &p.theirs } else { &p.ours };
    check(
        write_status(other, addr, key, 60)? == 0,
        "the key works before",
    )?;
    match what {
        Inval::Send => {
            fill_pattern(req, 0, 300, 61)?;
            fill(resp, TARGET, 512, FILLER)?;
            resp.post_recv(62, TARGET as u32, 512)?;
            let mut wr = Wr::new(63, Op::SendInv, 0, 300);
            wr.imm = key;
            req.post_send(&wr)?;
            expect(
                &wait(req, false, MS)?,
                63,
                wc_op::SEND,
                "SEND with invalidate",
            )?;
            let c = wait(resp, true, MS)?;
            expect(&c, 62, wc_op::RECV, "receive of SEND with invalidate")?;
            check(
                c.flags == WC_INV && c.imm == key,
                "invalidated key in the completion",
            )?;
            holds_pattern(resp, TARGET, 300, 61)?;
        }
        Inval::Read => {
            // The size of a READ both stacks make (rc_read_3072), so the
            // packets' shapes are ones both stacks sent.
            fill_pattern(resp, 0, 3072, 64)?;
            fill(req, TARGET, 3072 + 64, FILLER)?;
            let mut wr = Wr::new(65, Op::ReadInv, TARGET as u32, 3072).to(&resp.info(), 0);
            wr.imm = key;
            req.post_send(&wr)?;
            expect(
                &wait(req, false, MS)?,
                65,
                wc_op::READ,
                "READ with invalidate",
            )?;
            holds_pattern(req, TARGET, 3072, 64)?;
        }
        Inval::Local => {
            let mut wr = Wr::new(66, Op::LocalInv, 0, 0);
            wr.imm = key;
            req.post_send(&wr)?;
            expect(&wait(req, false, MS)?, 66, wc_op::LOCAL_INV, "LOCAL_INV")?;
        }
    }
    if owner_ours {
        check(!p.ours.fast_reg_valid(), "our MR invalid")?;
    }
    check(
        write_status(other, addr, key, 67)? == REM_ACCESS_ERR,
        "an access under the dead key fails",
    )
}

/// FLUSH (global) of a range just written, ours to theirs (the kernel's
/// rxe takes no remote address for a kernel ULP's FLUSH in 6.12). The
/// WRITE is one byte, a shape both stacks send (rc_write_1).
fn rc_flush(req: &dyn Endpoint, resp: &dyn Endpoint) -> Result {
    let peer = resp.info();
    fill_pattern(req, 0, 1, 70)?;
    fill(resp, TARGET, 65, FILLER)?;
    req.post_send(&Wr::new(71, Op::Write, 0, 1).to(&peer, TARGET as u64))?;
    req.post_send(&Wr::new(72, Op::Flush, 0, 4096).to(&peer, TARGET as u64))?;
    expect(&wait(req, false, MS)?, 71, wc_op::WRITE, "WRITE")?;
    expect(&wait(req, false, MS)?, 72, wc_op::FLUSH, "FLUSH")?;
    holds_pattern(resp, TARGET, 1, 70)
}

/// The multicast QPN.
const MCAST_QPN: u32 = 0xff_ffff;

/// A UD SEND of 500 bytes to an IPv4 multicast group that only the other
/// stack's endpoint is attached to, on a fresh UD pair (each "connected"
/// to the group: its address handle and QPN 0xFFFFFF). The kernel's rxe
/// only opens its MAC filter when attached; `interop.sh` makes its host a
/// member of 239.1.2.4 (ours joins 239.1.2.5 itself, on attach).
fn ud_multicast(ours_send: bool) -> Result {
    let group = Gid::from_ipv4([239, 1, 2, if ours_send { 4 } else { 5 }]);
    let mut ours = Ours::new(c_str!("rxi"), ours_gid(), true, LEN, 16)?;
    let mut theirs = Theirs::new(c_str!("cxi"), their_gid(), true, LEN, 16)?;
    let to_group = Info {
        qpn: MCAST_QPN,
        gid: group,
        ..Info::default()
    };
    ours.connect(&to_group, PSN_OURS, 0, Mtu::Mtu1024)?;
    theirs.connect(&to_group, PSN_THEIRS, 0, Mtu::Mtu1024)?;
    let (req, resp): (&dyn Endpoint, &dyn Endpoint) = if ours_send {
        (&ours, &theirs)
    } else {
        (&theirs, &ours)
    };
    resp.attach_mcast(&group, true)?;
    let seed = if ours_send { 81 } else { 82 };
    fill_pattern(req, 0, 500, seed)?;
    fill(resp, TARGET, GRH + 500 + 64, FILLER)?;
    resp.post_recv(92, TARGET as u32, (GRH + 500 + 64) as u32)?;
    req.post_send(&Wr::new(93, Op::Send, 0, 500))?;
    expect(&wait(req, false, MS)?, 93, wc_op::SEND, "multicast sender")?;
    let c = wait(resp, true, MS)?;
    expect(&c, 92, wc_op::RECV, "multicast receiver")?;
    check(c.byte_len as usize == GRH + 500, "length with the GRH")?;
    check(c.src_qp == req.info().qpn, "the sender's QPN")?;
    holds_pattern(resp, TARGET + GRH, 500, seed)?;
    resp.attach_mcast(&group, false)
}

/// A MAD handler that takes nothing.
struct Nobody;

impl rdma::mad::MadHandler for Nobody {
    fn recv(&self, _agent: &rdma::mad::agent::AgentCore, _mad: &rdma::mad::RecvMad) {}

    fn send_done(
        &self,
        _agent: &rdma::mad::agent::AgentCore,
        _cookie: u64,
        _status: rdma::mad::SendStatus,
    ) {
    }
}

/// QP1 both ways with the kernel's stack: a CM REQ (built with
/// `rdma::spec::cm_msg`) for a service nobody listens on goes from our MAD
/// layer (an agent of a vendor class sends it: the CM class is the core
/// CM's) to the C stack's QP1; its CM (`ib_cm`, loaded by `interop.sh`)
/// answers from its QP1 with a REJ to the address the REQ came from; our
/// MAD layer hands it to our CM, which counts it (and drops it: no
/// connection of ours has that ID).
fn gsi_cm_rej() -> Result {
    use rdma::spec::cm_msg::{
        tcp_service_id, Bytes, CmMessage, CmaHeader, Req, ReqPath, TRANSPORT_RC,
    };
    let o = rc::Opts {
        qp_type: rdma::spec::qp_state::QpType::Ud,
        mr_access: rdma::spec::opcodes::Access::LOCAL_WRITE,
        buf_len: 4096,
        qkey: 0x1111,
        ..rc::RC
    };
    let g = rc::End::new(
        rc::Port {
            name: c_str!("rxi"),
            gid: ours_gid(),
        },
        &o,
    )?;
    let agent = rdma::mad::Agent::register(
        &g.dev,
        1,
        0x0a,
        1,
        kernel::sync::Arc::new(Nobody, GFP_KERNEL)?,
    )?;
    let cm = rdma::cm::port::counters(&g.dev, 1).ok_or(EINVAL)?;
    let rej = rdma::spec::mad::CM_ATTR_REJ;
    let before = cm.get(rdma::cm::counters::Group::RxMsgs, rej);
    let mut pd = [0u8; 92];
    CmaHeader::ipv4(4242, [10, 82, 0, 2], [10, 82, 0, 1])
        .write(&mut pd)
        .map_err(|_| EINVAL)?;
    let req = Req {
        local_comm_id: 0x5eed_c0de,
        service_id: tcp_service_id(4242),
        local_ca_guid: 0x0200_00ff_fe00_0002,
        local_qpn: 0x99,
        responder_resources: 1,
        initiator_depth: 1,
        remote_cm_response_timeout: 20,
        transport_service_type: TRANSPORT_RC,
        starting_psn: 0x1234,
        local_cm_response_timeout: 20,
        retry_count: 7,
        partition_key: 0xffff,
        path_mtu: 3,
        rnr_retry_count: 7,
        max_cm_retries: 15,
        primary_path: ReqPath {
            local_lid: 0xffff,
            remote_lid: 0xffff,
            local_gid: ours_gid(),
            remote_gid: their_gid(),
            packet_rate: 0,
            hop_limit: 64,
            local_ack_timeout: 18,
            ..ReqPath::default()
        },
        private_data: Bytes::from_slice(&pd).map_err(|_| EINVAL)?,
        ..Req::default()
    };
    let mut mad = [0u8; 256];
    CmMessage::Req(req)
        .write_mad(0x77, 0, &mut mad)
        .map_err(|_| EINVAL)?;
    let to = rdma::mad::MadAddr {
        ah: g.av(their_gid())?,
        remote_qpn: 1,
        pkey_index: 0,
    };
    agent.send(&to, &mad, rdma::mad::SendOpts::default())?;
    for _ in 0..2000 {
        if cm.get(rdma::cm::counters::Group::RxMsgs, rej) > before {
            break;
        }
        rdma::kshim::time::msleep(10);
    }
    check(
        cm.get(rdma::cm::counters::Group::RxMsgs, rej) == before + 1,
        "one REJ from the C stack's CM reached our CM",
    )
}

/// The kernel's rdma_cm (through `rxe_cpeer`) connects to our address
/// on a port nobody listens on: our CM answers the REQ with a REJ, reason
/// INVALID_SERVICE_ID (8), which the C CM parses and rdma_cm reports as
/// REJECTED with that status; our CM counted the REQ in and the REJ out.
fn cm_no_listener() -> Result {
    use rdma::cm::counters::Group;
    use rdma::spec::mad::{CM_ATTR_REJ, CM_ATTR_REQ};
    let dev = rdma::device::get_by_name(c_str!("rxi")).ok_or(EINVAL)?;
    let cm = rdma::cm::port::counters(&dev, 1).ok_or(EINVAL)?;
    let (req0, rej0) = (
        cm.get(Group::RxMsgs, CM_ATTR_REQ),
        cm.get(Group::TxMsgs, CM_ATTR_REJ),
    );
    let got = cpeer_sys::CmPeer::connect(
        &cpeer_sys::cm_v4([10, 82, 0, 2]),
        4791 + 1000,
        b"hello",
        4096,
        30_000,
    )?;
    let cpeer_sys::CmConnect::Rejected(peer) = got else {
        return check(false, "rejected");
    };
    let info = peer.info()?;
    pr_info!(
        "cm: the C stack's connect was rejected: reason {}, {} bytes of private data\n",
        info.rej_reason,
        info.rej_pdata_len
    );
    check(info.rej_reason == 8, "REJ reason INVALID_SERVICE_ID")?;
    pr_info!(
        "cm: REQ in {} -> {}, REJ out {} -> {}\n",
        req0,
        cm.get(Group::RxMsgs, CM_ATTR_REQ),
        rej0,
        cm.get(Group::TxMsgs, CM_ATTR_REJ)
    );
    check(
        cm.get(Group::RxMsgs, CM_ATTR_REQ) == req0 + 1
            && cm.get(Group::TxMsgs, CM_ATTR_REJ) == rej0 + 1,
        "one REQ in, one REJ out",
    )
}

/// Which invalidation [`rc_invalidate`] runs.
#[derive(Clone, Copy)]
enum Inval {
    Send,
    Read,
    Local,
}

struct Pair<A, B> {
    ours: A,
    theirs: B,
}

fn pair(ud: bool) -> Result<Pair<Ours, Theirs>> {
    let mut ours = Ours::new(c_str!("rxi"), ours_gid(), ud, LEN, 16)?;
    let mut theirs = Theirs::new(c_str!("cxi"), their_gid(), ud, LEN, 16)?;
    let (oi, ti): (Info, Info) = (ours.info(), theirs.info());
    ours.connect(&ti, PSN_OURS, PSN_THEIRS, Mtu::Mtu1024)?;
    theirs.connect(&oi, PSN_THEIRS, PSN_OURS, Mtu::Mtu1024)?;
    Ok(Pair { ours, theirs })
}

/// (name, operation, length, remote key and address zero): each runs both
/// ways. A zero-length WRITE or READ names no memory, so the responder must
/// not check its rkey (IBTA C9-88; RTRS sends such WRITEs with rkey 0).
const RC_CASES: [(&str, Op, usize, bool); 12] = [
    ("rc_send_1", Op::Send, 1, false),
    ("rc_send_12293", Op::Send, 12293, false),
    ("rc_send_imm_1000", Op::SendImm, 1000, false),
    ("rc_write_1", Op::Write, 1, false),
    ("rc_write_65539", Op::Write, 65539, false),
    ("rc_write_imm_4097", Op::WriteImm, 4097, false),
    ("rc_write_imm_0", Op::WriteImm, 0, false),
    ("rc_write_imm_0_rkey_0", Op::WriteImm, 0, true),
    ("rc_read_1", Op::Read, 1, false),
    ("rc_read_65539", Op::Read, 65539, false),
    ("rc_read_3072", Op::Read, 3072, false),
    ("rc_read_0_rkey_0", Op::Read, 0, true),
];

const UD_CASES: [(&str, bool, usize); 3] = [
    ("ud_send_1", false, 1),
    ("ud_send_1024", false, 1024),
    ("ud_send_imm_333", true, 333),
];

const DIRECTIONS: [&str; 2] = ["theirs_to_ours", "ours_to_theirs"];

/// What a case runs.
#[derive(Clone, Copy)]
enum What {
    /// `RC_CASES[i]`.
    Rc(usize),
    /// Both atomics.
    Atomics,
    /// ATOMIC_WRITE (ours to theirs only: see rxe_cpeer.h).
    AtomicWrite,
    /// `UD_CASES[i]`.
    Ud(usize),
    /// An invalidation, on a fresh pair.
    Invalidate(Inval),
    /// FLUSH (ours to theirs only).
    Flush,
    /// UD multicast, on a fresh pair.
    Multicast,
    /// QP1: a CM REQ to the C stack, its REJ back.
    Gsi,
    /// The C stack's rdma_cm connects to a port nobody listens on here.
    CmNoListener,
    /// The C stack sends tagged messages to our TM SRQ.
    TagMatching,
    /// Its packets the other way, with plain verbs.
    TagMatchingMirror,
}

/// One case of the table: what, and which way (`DIRECTIONS[dir]`).
struct Step {
    name: CString,
    what: What,
    dir: usize,
}

impl Step {
    fn new(name: &str, what: What, dir: usize) -> Result<Step> {
        Ok(Step {
            name: CString::try_from_fmt(fmt!("{}_{}", name, DIRECTIONS[dir]))?,
            what,
            dir,
        })
    }
}

/// The context of the cases: the RC or UD pair (`true`: UD).
type Pairs = Fixture<bool, Pair<Ours, Theirs>>;

impl Case<Pairs> for Step {
    fn name(&self) -> &str {
        self.name.to_str().unwrap_or("?")
    }

    fn run(&self, pairs: &mut Pairs) -> Result {
        let d = self.dir;
        match self.what {
            What::Invalidate(i) => return rc_invalidate(i, d == 1),
            What::Multicast => return ud_multicast(d == 1),
            What::Gsi => return gsi_cm_rej(),
            What::CmNoListener => return cm_no_listener(),
            What::TagMatching => return tm_from_c_rxe(),
            _ => {}
        }
        let p = pairs.get(matches!(self.what, What::Ud(_)), pair)?;
        // The requester, then the responder.
        let (req, resp): (&dyn Endpoint, &dyn Endpoint) = if d == 0 {
            (&p.theirs, &p.ours)
        } else {
            (&p.ours, &p.theirs)
        };
        match self.what {
            What::Rc(i) => {
                let (_, op, len, no_key) = RC_CASES[i];
                rc_transfer(req, resp, op, len, no_key, (d * 16 + i + 1) as u8)
            }
            What::Atomics => rc_atomics(req, resp),
            What::AtomicWrite => rc_atomic_write(req, resp),
            What::Flush => rc_flush(req, resp),
            What::TagMatchingMirror => tm_mirror(&p.ours, &p.theirs),
            What::Invalidate(_)
            | What::Multicast
            | What::Gsi
            | What::CmNoListener
            | What::TagMatching => Ok(()),
            What::Ud(i) => {
                let (_, imm, len) = UD_CASES[i];
                let seed = if d == 0 { 40 + i } else { 50 + i };
                ud_send(req, resp, imm, len, seed as u8)
            }
        }
    }
}

/// Every case: RC each way (each operation, then the atomics), then UD
/// each way.
fn cases() -> Result<KVec<Step>> {
    let mut v = KVec::new();
    for dir in 0..DIRECTIONS.len() {
        for (i, (name, _, _, _)) in RC_CASES.iter().enumerate() {
            v.push(Step::new(name, What::Rc(i), dir)?, GFP_KERNEL)?;
        }
        v.push(Step::new("rc_atomics", What::Atomics, dir)?, GFP_KERNEL)?;
    }
    // The kernel's rxe answers an ATOMIC_WRITE with a zero-length READ
    // RESPONSE ONLY, which our requester takes as its acknowledgement.
    v.push(
        Step::new("rc_atomic_write", What::AtomicWrite, 1)?,
        GFP_KERNEL,
    )?;
    v.push(Step::new("rc_flush", What::Flush, 1)?, GFP_KERNEL)?;
    for dir in 0..DIRECTIONS.len() {
        for (name, i) in [
            ("rc_send_with_inv", Inval::Send),
            ("rc_local_inv", Inval::Local),
        ] {
            v.push(Step::new(name, What::Invalidate(i), dir)?, GFP_KERNEL)?;
        }
    }
    v.push(
        Step::new("rc_read_with_inv", What::Invalidate(Inval::Read), 1)?,
        GFP_KERNEL,
    )?;
    v.push(Step::new("gsi_cm_req_rej", What::Gsi, 1)?, GFP_KERNEL)?;
    v.push(
        Step::new("cm_no_listener_rej", What::CmNoListener, 0)?,
        GFP_KERNEL,
    )?;
    v.push(
        Step::new("tm_from_c_rxe", What::TagMatching, 0)?,
        GFP_KERNEL,
    )?;
    v.push(
        Step::new("tm_mirror", What::TagMatchingMirror, 1)?,
        GFP_KERNEL,
    )?;
    for dir in 0..DIRECTIONS.len() {
        for (i, (name, _, _)) in UD_CASES.iter().enumerate() {
            v.push(Step::new(name, What::Ud(i), dir)?, GFP_KERNEL)?;
        }
        v.push(Step::new("ud_multicast", What::Multicast, dir)?, GFP_KERNEL)?;
    }
    Ok(v)
}

/// `tm_mirror`: see the module's doc.
fn tm_mirror(ours: &dyn Endpoint, theirs: &dyn Endpoint) -> Result {
    const SIZES: [u32; 3] = [80, 3016, 32];
    for (i, &len) in SIZES.iter().enumerate() {
        theirs.post_recv(i as u64, (i * 4096) as u32, len)?;
        ours.post_send(&Wr::new(i as u64, Op::Send, (i * 4096) as u32, len))?;
    }
    for (i, &len) in SIZES.iter().enumerate() {
        let c = wait(ours, false, MS)?;
        check(c.wr_id == i as u64 && c.status == 0, "our SENDs")?;
        let c = wait(theirs, true, MS)?;
        check(
            c.wr_id == i as u64 && c.status == 0 && c.byte_len == len,
            "the C side's receives",
        )?;
    }
    ours.post_recv(7, 0, 32)?;
    theirs.post_send(&Wr::new(5, Op::Read, 65536, 65536).to(&ours.info(), 65536))?;
    theirs.post_send(&Wr::new(6, Op::Send, 0, 32))?;
    for id in [5, 6] {
        let c = wait(theirs, false, MS)?;
        check(c.wr_id == id && c.status == 0, "the C side's READ and SEND")?;
    }
    let c = wait(ours, true, MS)?;
    check(
        c.wr_id == 7 && c.status == 0 && c.byte_len == 32,
        "our receive",
    )
}

/// `tm_from_c_rxe`: see the module's doc.
fn tm_from_c_rxe() -> Result {
    use rdma::spec::opcodes::WcFlags;
    use rdma::spec::tm::header::{TmhOp, RNDV_HDRS_LEN, TMH_LEN};
    use rdma::verbs::srq::tm::TmCap;
    use tm::{ctx_of, rvh, tmh};

    const RNDV: usize = 64 * 1024;
    const DATA: usize = 64 * 1024;
    const FIN: usize = 200 * 1024;
    let o = rc::Opts {
        psn: PSN_OURS,
        timeout: peer::ACK_TIMEOUT,
        ..rc::RC
    };
    let rx = tm::Rx::new(
        rc::Port {
            name: c_str!("rxi"),
            gid: ours_gid(),
        },
        &o,
        TmCap {
            max_num_tags: 16,
            max_ops: 8,
        },
        16,
    )?;
    let mut theirs = Theirs::new(c_str!("cxi"), their_gid(), false, LEN, 16)?;
    let ti = theirs.info();
    let oi = Info {
        addr: rx.buf.addr(0),
        rkey: rx.mr.rkey(),
        qpn: rx.qp.qpn(),
        gid: ours_gid(),
    };
    theirs.connect(&oi, PSN_THEIRS, PSN_OURS, Mtu::Mtu1024)?;
    rx.connect(
        &o,
        &rc::Remote {
            qpn: ti.qpn,
            psn: PSN_THEIRS,
            av: rx.av(ti.gid)?,
        },
    )?;
    rx.add(1, 1, u64::MAX, &[(0, 64)])?;
    rx.add(2, 2, u64::MAX, &[(4096, 1000), (8192, 2000)])?;
    rx.add(3, 3, u64::MAX, &[(65536, RNDV / 2), (131072, RNDV / 2)])?;
    // The C side's messages at 0, 4096 and 8192; its rendezvous data at
    // DATA; its FIN receive at FIN.
    let mut pattern = [0u8; 3000];
    verify::Rng(0x7e).fill(&mut pattern);
    for (tag, at, len) in [(1u64, 0usize, 64usize), (2, 4096, 3000)] {
        theirs.write(at, &tmh(TmhOp::Eager, ctx_of(tag), tag))?;
        theirs.write(at + TMH_LEN, &pattern[..len])?;
    }
    let mut chunk = [0u8; 4096];
    for k in 0..RNDV / chunk.len() {
        verify::Rng(0x100 + k as u32).fill(&mut chunk);
        theirs.write(DATA + k * chunk.len(), &chunk)?;
    }
    theirs.write(8192, &tmh(TmhOp::Rndv, ctx_of(3), 3))?;
    theirs.write(
        8192 + TMH_LEN,
        &rvh(ti.addr + DATA as u64, ti.rkey, RNDV as u32),
    )?;
    theirs.post_recv(9, FIN as u32, 64)?;
    for (id, at, len) in [
        (1u64, 0u32, TMH_LEN + 64),
        (2, 4096, TMH_LEN + 3000),
        (3, 8192, RNDV_HDRS_LEN),
    ] {
        theirs.post_send(&Wr::new(id, Op::Send, at, len as u32))?;
    }
    let md = WcFlags(WcFlags::TM_MATCH.0 | WcFlags::TM_DATA_VALID.0);
    rx.expect_tm(&rx.wc()?, 1, md, Some(1), 64)?;
    rx.expect_tm(&rx.wc()?, 2, WcFlags::TM_MATCH, Some(2), 0)?;
    rx.expect_tm(&rx.wc()?, 2, WcFlags::TM_DATA_VALID, None, 3000)?;
    rx.expect_tm(&rx.wc()?, 3, WcFlags::TM_MATCH, Some(3), RNDV as u32)?;
    rx.expect_tm(&rx.wc()?, 3, WcFlags::TM_DATA_VALID, None, RNDV as u32)?;
    // The bytes: eager ones without their TMH, the rendezvous as read.
    let mut got = [0u8; 3000];
    rx.buf.read(0, &mut got[..64])?;
    check(got[..64] == pattern[..64], "the one-packet eager message")?;
    rx.buf.read(4096, &mut got[..1000])?;
    rx.buf.read(8192, &mut got[1000..])?;
    check(
        got == pattern,
        "the three-packet eager message, across two SGEs",
    )?;
    let mut want = [0u8; 4096];
    for k in 0..RNDV / chunk.len() {
        verify::Rng(0x100 + k as u32).fill(&mut want);
        let at = if k < RNDV / 2 / chunk.len() {
            65536 + k * chunk.len()
        } else {
            131072 + (k - RNDV / 2 / chunk.len()) * chunk.len()
        };
        rx.buf.read(at, &mut chunk)?;
        check(chunk == want, "the rendezvous data, read from the C side")?;
    }
    for id in 1..=3 {
        let c = wait(&theirs, false, MS)?;
        check(
            c.wr_id == id && c.status == 0 && c.opcode == wc_op::SEND,
            "the C side's SENDs",
        )?;
    }
    let c = wait(&theirs, true, MS)?;
    check(
        c.wr_id == 9
            && c.status == 0
            && c.opcode == wc_op::RECV
            && c.byte_len as usize == RNDV_HDRS_LEN,
        "our FIN at the C side",
    )?;
    let mut fin = [0u8; RNDV_HDRS_LEN];
    theirs.read(FIN, &mut fin)?;
    check(
        fin[..TMH_LEN] == tmh(TmhOp::Fin, ctx_of(3), 3)
            && fin[TMH_LEN..] == rvh(ti.addr + DATA as u64, ti.rkey, RNDV as u32),
        "the FIN: the request's headers, operation FIN",
    )?;
    check(
        rx.qp.query()?.qp_state == rdma::spec::qp_state::QpState::Rts,
        "our QP in RTS",
    )?;
    Ok(())
}

struct RxeInteropTest;

impl kernel::Module for RxeInteropTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(&cases()?, &mut Pairs::new())?;
        Ok(RxeInteropTest)
    }
}
