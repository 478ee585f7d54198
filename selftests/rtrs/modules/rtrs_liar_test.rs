// SPDX-License-Identifier: GPL-2.0

//! Selftest: clients that lie to our RTRS server. Each case connects a
//! one-connection path of its own (our rdma_cm on our rxe `rtc`, to the
//! server's address 10.80.2.2 in namespace rt_b), does the INFO exchange
//! as the kernel's client does, then sends a request the server must
//! refuse: a chunk number past the queue depth, a message offset at the
//! end of the chunk, a garbage message, a read whose buffer descriptor
//! names memory the client never registered; and a client that goes silent
//! (its heartbeats unanswered). The server must close that path
//! (we see the disconnection), log it, and keep serving the others
//! (`rnbd.sh` reads the kernel client's device afterwards).

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::EINVAL;
use kernel::prelude::*;

use rdma::cma::{CmIdCore, ConnParam, EventKind, IpAddr, SockAddr};
use rdma::spec::opcodes::WcOpcode;
use rdma::verbs::wr::{RecvWr, SendOp, SendWr};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

// Of the rping library, only the device endpoint and the event recorder.
#[allow(dead_code)]
#[path = "../../lib/rping.rs"]
mod rping;
use rping::{Ep, Rec, Recorder};

/// The RTRS codec, compiled unchanged from the host-tested crate.
#[allow(dead_code)]
#[path = "../../../rtrs/proto/kernel_mod.rs"]
pub mod proto;

use proto::conn::{ConnReq, ConnRsp};
use proto::consts::{RTRS_MSG_NEED_INVAL_F, RTRS_PORT};
use proto::imm::{mem_bits, to_imm};
use proto::msg::{InfoReq, InfoRsp, RdmaRead, SgDesc};
use proto::rnbd::{Io, RNBD_OP_READ};

module! {
    type: RtrsLiarTest,
    name: "rtrs_liar_test",
    author: "rdma-rs developers",
    description: "Selftest: lying RTRS clients against our RTRS server",
    license: "GPL",
}

/// Where INFO_RSP lands in the endpoint's buffer, and INFO_REQ is built.
const RSP_AT: usize = 4096;
/// Room for INFO_RSP: a descriptor per chunk when the server always
/// invalidates.
const RSP_ROOM: u32 = 2048;
const REQ_AT: usize = 8192;
/// Garbage for the last case.
const JUNK_AT: usize = 12288;

/// What the server told us: the queue depth, the chunk size, the first
/// chunk's address and key.
struct Session {
    qd: u32,
    chunk: u32,
    addr: u64,
    rkey: u32,
}

fn connect(ep: &Ep, rec: &Rec, uuid: u8) -> Result<(rdma::cma::CmId, Session)> {
    let id = rdma::cma::CmId::new(ep.ns()?, (*rec).clone())?;
    id.resolve_addr(
        None,
        SockAddr {
            ip: IpAddr::V4([10, 80, 2, 2]),
            port: RTRS_PORT,
        },
    )?;
    rec.take(EventKind::AddrResolved, 20)?;
    id.resolve_route()?;
    rec.take(EventKind::RouteResolved, 20)?;
    ep.make_qp(&id)?;
    post_rsp_recv(ep, &id)?;
    let req = ConnReq::new(0, 1, 1, [uuid; 16], [uuid ^ 0x5a; 16], true);
    let mut pd = [0u8; 56];
    let n = req.write(&mut pd).map_err(|_| EINVAL)?;
    let mut private_data = KVec::new();
    private_data.extend_from_slice(&pd[..n], GFP_KERNEL)?;
    id.connect(&ConnParam {
        private_data,
        retry_count: 7,
        rnr_retry_count: 7,
        ..ConnParam::default()
    })?;
    let ev = rec.take(EventKind::Established, 30)?;
    let rsp = ConnRsp::parse(&ev.private_data).map_err(|_| EINVAL)?;
    let chunk = rsp.chunk_size().ok_or(EINVAL)?;
    // INFO_REQ, then INFO_RSP in the receive posted before connecting.
    let mut m = [0u8; 272];
    let n = InfoReq::new(b"liar")
        .and_then(|r| r.write(&mut m))
        .map_err(|_| EINVAL)?;
    ep.buf.write(REQ_AT, &m[..n])?;
    let sg = [ep.buf.sge(REQ_AT, n as u32, ep.mr.lkey())?];
    let qp = id.qp().ok_or(EINVAL)?;
    qp.post_send(&[SendWr::new(1, SendOp::Send, &sg)])
        .map_err(|(_, e)| e)?;
    let wc = ep.wait(rec, WcOpcode::Recv)?.ok_or(EINVAL)?;
    let mut raw = KVec::from_elem(0u8, RSP_ROOM as usize, GFP_KERNEL)?;
    let len = core::cmp::min(wc.byte_len as usize, raw.len());
    ep.buf.read(RSP_AT, &mut raw[..len])?;
    let info = InfoRsp::parse(&raw[..len]).map_err(|_| EINVAL)?;
    let first = info.descs().get(0).ok_or(EINVAL)?;
    Ok((
        id,
        Session {
            qd: u32::from(rsp.queue_depth),
            chunk,
            addr: first.addr,
            rkey: first.key,
        },
    ))
}

fn post_rsp_recv(ep: &Ep, id: &CmIdCore) -> Result {
    let qp = id.qp().ok_or(EINVAL)?;
    let sg = [ep.buf.sge(RSP_AT, RSP_ROOM, ep.mr.lkey())?];
    qp.post_recv(&[RecvWr {
        wr_id: 9,
        cqe: None,
        sg: &sg,
    }])
    .map_err(|(_, e)| e)
}

/// Connects, lies with `lie` (given the session, returns the write's
/// length, remote offset and immediate), and checks the server hangs up.
/// A lie: given the session and the endpoint (whose buffer it may fill
/// at `JUNK_AT`), the RDMA WRITE's length, remote offset and immediate.
type Lie = fn(&Session, &Ep) -> Result<(u32, u64, u32)>;

fn lie(what: &str, uuid: u8, lie: Lie) -> Result {
    let ep = Ep::new(c_str!("rtc"))?;
    let rec = Recorder::make()?;
    let (id, s) = connect(&ep, &rec, uuid)?;
    ep.buf.fill(JUNK_AT, 64, 0xee)?;
    let (len, off, imm) = lie(&s, &ep)?;
    let qp = id.qp().ok_or(EINVAL)?;
    let op = SendOp::WriteWithImm {
        remote_addr: s.addr + off,
        rkey: s.rkey,
        imm,
    };
    if len > 0 {
        let sg = [ep.buf.sge(JUNK_AT, len, ep.mr.lkey())?];
        qp.post_send(&[SendWr::new(2, op, &sg)])
            .map_err(|(_, e)| e)?;
    } else {
        qp.post_send(&[SendWr::new(2, op, &[])])
            .map_err(|(_, e)| e)?;
    }
    let hung_up = rec.take(EventKind::Disconnected, 30).is_ok();
    pr_info!("rtrs liar: {}: server hung up: {}\n", what, hung_up);
    drop(id);
    check(hung_up, "the server closed the lying path")
}

fn chunk_past_queue_depth() -> Result {
    lie("chunk past the queue depth", 0x11, |s, _| {
        let payload = s.qd << mem_bits(s.qd).map_err(|_| EINVAL)?;
        Ok((0, 0, to_imm(0, payload)))
    })
}

fn offset_at_chunk_end() -> Result {
    lie("offset at the chunk's end", 0x22, |s, _| {
        Ok((0, 0, to_imm(0, s.chunk)))
    })
}

fn garbage_message() -> Result {
    lie("garbage message", 0x33, |_, _| Ok((64, 0, to_imm(0, 32))))
}

/// A well-formed RNBD read whose buffer descriptor names memory the client
/// never registered: the server's RDMA WRITE of the data fails (remote
/// access error), and the server closes the path.
fn read_into_unregistered_buffer() -> Result {
    lie("read into an unregistered buffer", 0x44, |s, ep| {
        const DATA: u32 = 4096;
        let io = Io {
            device_id: 0,
            sector: 0,
            rw: RNBD_OP_READ,
            bi_size: DATA,
            prio: 0,
        };
        let mut m = [0u8; 64];
        let u = io.write(&mut m).map_err(|_| EINVAL)?;
        let desc = [SgDesc {
            addr: 0xdead_0000,
            key: 0x00ba_d0ff,
            len: DATA,
        }];
        let r = RdmaRead::new(u as u16, RTRS_MSG_NEED_INVAL_F, &desc)
            .and_then(|r| r.write(&mut m[u..]))
            .map_err(|_| EINVAL)?;
        ep.buf.write(JUNK_AT, &m[..u + r])?;
        let payload = DATA + u as u32;
        check(payload < s.chunk, "the request fits the chunk")?;
        Ok(((u + r) as u32, u64::from(DATA), to_imm(0, payload)))
    })
}

/// A client that says nothing after INFO: its receives take the server's
/// heartbeats, which go unanswered, and after 5 silent periods (about
/// 35 s) the server closes the path.
fn silent_client() -> Result {
    let ep = Ep::new(c_str!("rtc"))?;
    let rec = Recorder::make()?;
    let (id, _s) = connect(&ep, &rec, 0x55)?;
    let qp = id.qp().ok_or(EINVAL)?;
    for _ in 0..16 {
        qp.post_recv(&[RecvWr {
            wr_id: 10,
            cqe: None,
            sg: &[],
        }])
        .map_err(|(_, e)| e)?;
    }
    let hung_up = rec.take(EventKind::Disconnected, 90).is_ok();
    pr_info!("rtrs liar: silent client: server hung up: {}\n", hung_up);
    drop(id);
    check(hung_up, "the server closed the silent path")
}

const CASES: &[FnCase<()>] = &[
    case!("chunk_past_queue_depth", |()| chunk_past_queue_depth()),
    case!("offset_at_chunk_end", |()| offset_at_chunk_end()),
    case!("garbage_message", |()| garbage_message()),
    case!("read_into_unregistered_buffer", |()| {
        read_into_unregistered_buffer()
    }),
    case!("silent_client", |()| silent_client()),
];

struct RtrsLiarTest;

impl kernel::Module for RtrsLiarTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut ())?;
        Ok(RtrsLiarTest)
    }
}
