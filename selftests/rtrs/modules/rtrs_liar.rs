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
//!
//! And intruders: connection requests that do not fit the path they name
//! must be refused alone (a conn_rsp with ECONNRESET, as the kernel's
//! server refuses them), the path untouched. Against a path of ours still
//! connecting (cid 0 of 2 up): a second cid 0, and cid 1 with another
//! connection count, are refused, and the path then completes with its
//! real cid 1 and its INFO exchange. Against the kernel client's live
//! session (its UUID and connection count are the module's parameters
//! `victim_uuid` and `victim_cid_num`, which `rnbd.sh` reads from our
//! server's log, while it runs IO on that session): a duplicate cid and a
//! wrong connection count are refused; `rnbd.sh` checks that its IO went
//! on with every byte right and no reconnect.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::{EINVAL, ENOENT};
use kernel::prelude::*;
use kernel::ThisModule;

use rdma::cma::{CmId, CmIdCore, ConnParam, EventKind, IpAddr, SockAddr};
use rdma::kshim::{param, time};
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

/// An id of ours that sent connection request `req` to the server (its
/// QP made, INFO_RSP's receive posted); its events go to `rec`.
fn request(ep: &Ep, rec: &Rec, req: &ConnReq) -> Result<CmId> {
    let id = CmId::new(ep.ns()?, (*rec).clone())?;
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
    if req.cid == 0 {
        post_rsp_recv(ep, &id)?;
    }
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
    Ok(id)
}

/// A one-connection path of ours, INFO exchanged.
fn connect(ep: &Ep, rec: &Rec, uuid: u8) -> Result<(CmId, Session)> {
    let req = ConnReq::new(0, 1, 1, [uuid; 16], [uuid ^ 0x5a; 16], true);
    let id = request(ep, rec, &req)?;
    let ev = rec.take(EventKind::Established, 30)?;
    let s = info(ep, rec, &id, &ev.private_data)?;
    Ok((id, s))
}

/// The INFO exchange on cid 0 (`id`), once every connection is up;
/// `conn_rsp` is the server's acceptance of cid 0.
fn info(ep: &Ep, rec: &Rec, id: &CmIdCore, conn_rsp: &[u8]) -> Result<Session> {
    let rsp = ConnRsp::parse(conn_rsp).map_err(|_| EINVAL)?;
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
    Ok(Session {
        qd: u32::from(rsp.queue_depth),
        chunk,
        addr: first.addr,
        rkey: first.key,
    })
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

/// The errno the kernel's server refuses a request that does not fit a
/// path with (`ECONNRESET`).
const REFUSED: i16 = -104;

/// Sends connection request `req` (from a connection and device objects
/// of its own) and returns the errno of the server's refusal; `EINVAL` if
/// the server accepted it or said nothing in 20 s.
fn refusal(req: &ConnReq) -> Result<i16> {
    let ep = Ep::new(c_str!("rtc"))?;
    let rec = Recorder::make()?;
    let id = request(&ep, &rec, req)?;
    for _ in 0..2000 {
        if let Some(ev) = rec.seen.lock().iter().find(|e| {
            matches!(
                e.kind,
                EventKind::Rejected | EventKind::Established | EventKind::Unreachable
            )
        }) {
            let errno = match ev.kind {
                EventKind::Rejected => ConnRsp::reject_errno(&ev.private_data).unwrap_or(0),
                _ => 0,
            };
            pr_info!(
                "rtrs liar: cid {} of {}: {:?}, errno {}\n",
                req.cid,
                req.cid_num,
                ev.kind,
                errno
            );
            drop(id);
            return if errno < 0 { Ok(errno) } else { Err(EINVAL) };
        }
        time::msleep(10);
    }
    pr_info!("rtrs liar: cid {} of {}: no answer\n", req.cid, req.cid_num);
    drop(id);
    Err(EINVAL)
}

/// A path of ours, cid 0 of 2 up: requests that do not fit it are refused
/// with ECONNRESET, and it completes (its real cid 1, the INFO exchange)
/// as if they had never come.
fn intruders_on_connecting_path() -> Result {
    const U: u8 = 0x66;
    let (sess, paths) = ([U; 16], [U ^ 0x5a; 16]);
    let ep = Ep::new(c_str!("rtc"))?;
    let rec0 = Recorder::make()?;
    let id0 = request(&ep, &rec0, &ConnReq::new(0, 2, 1, sess, paths, true))?;
    let ev = rec0.take(EventKind::Established, 30)?;
    // A second cid 0, then cid 1 with another count.
    let dup = refusal(&ConnReq::new(0, 2, 1, sess, paths, true))?;
    check(dup == REFUSED, "a duplicate cid is refused with ECONNRESET")?;
    let count = refusal(&ConnReq::new(1, 3, 1, sess, paths, true))?;
    check(
        count == REFUSED,
        "a wrong connection count is refused with ECONNRESET",
    )?;
    check(
        !rec0.has(EventKind::Disconnected),
        "the connecting path is untouched",
    )?;
    let rec1 = Recorder::make()?;
    let id1 = request(&ep, &rec1, &ConnReq::new(1, 2, 1, sess, paths, true))?;
    rec1.take(EventKind::Established, 30)?;
    let s = info(&ep, &rec0, &id0, &ev.private_data)?;
    check(s.qd > 0, "the path completed its INFO exchange")?;
    check(
        !rec0.has(EventKind::Disconnected) && !rec1.has(EventKind::Disconnected),
        "the path is still connected",
    )?;
    drop(id1);
    drop(id0);
    Ok(())
}

/// The live session of the kernel's client, from the module's parameters.
struct Victim {
    uuid: [u8; 16],
    cid_num: u16,
}

fn victim(module: &'static ThisModule) -> Result<Victim> {
    let t = param::text(module, c_str!("victim_uuid"))?;
    let hex = t.as_bytes();
    if hex.len() != 32 {
        pr_err!("rtrs liar: no victim_uuid given\n");
        return Err(ENOENT);
    }
    let mut uuid = [0u8; 16];
    for (i, b) in uuid.iter_mut().enumerate() {
        let pair = core::str::from_utf8(&hex[2 * i..2 * i + 2]).map_err(|_| EINVAL)?;
        *b = u8::from_str_radix(pair, 16).map_err(|_| EINVAL)?;
    }
    let n = param::get_int(module, c_str!("victim_cid_num"))?;
    let cid_num = u16::try_from(n)
        .ok()
        .filter(|&n| n > 0 && n < 4096)
        .ok_or(EINVAL)?;
    Ok(Victim { uuid, cid_num })
}

/// Requests for the kernel client's live session (from another device, as
/// any host could send them): a duplicate cid and a wrong connection count
/// are refused with ECONNRESET. Whether its IO noticed, `rnbd.sh` sees.
fn intruders_on_live_session(module: &'static ThisModule) -> Result {
    let v = victim(module)?;
    let paths = [0x77; 16];
    for cid in [0, v.cid_num - 1] {
        let dup = refusal(&ConnReq::new(cid, v.cid_num, 1, v.uuid, paths, false))?;
        check(dup == REFUSED, "a duplicate cid of a live path is refused")?;
    }
    let count = refusal(&ConnReq::new(0, v.cid_num + 1, 1, v.uuid, paths, true))?;
    check(
        count == REFUSED,
        "a wrong connection count for a live path is refused",
    )
}

/// What the cases share: the module (for its parameters).
struct Ctx {
    module: &'static ThisModule,
}

const CASES: &[FnCase<Ctx>] = &[
    case!("chunk_past_queue_depth", |_| chunk_past_queue_depth()),
    case!("offset_at_chunk_end", |_| offset_at_chunk_end()),
    case!("garbage_message", |_| garbage_message()),
    case!("read_into_unregistered_buffer", |_| {
        read_into_unregistered_buffer()
    }),
    case!("intruders_on_connecting_path", |_| {
        intruders_on_connecting_path()
    }),
    case!("intruders_on_live_session", |c| {
        intruders_on_live_session(c.module)
    }),
    case!("silent_client", |_| silent_client()),
];

struct RtrsLiarTest;

impl kernel::Module for RtrsLiarTest {
    fn init(module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut Ctx { module })?;
        Ok(RtrsLiarTest)
    }
}
