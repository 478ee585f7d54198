// SPDX-License-Identifier: GPL-2.0

//! Selftest: rdma-core's `rping`, `rdma_client`, `rdma_server` and
//! `ucmatose` (librdmacm, over the kernel's rxe) against ULPs of ours that
//! speak their protocols, both ways.
//!
//! `cm.sh` has `rping -c -a 10.85.0.2` retrying in the background and
//! `rping -s -a 10.85.0.1 -p 7175 -S 100` listening (its buffer must be
//! as large as ours: it READs the size we announce into it) before it loads this module;
//! our device `rxc` is 10.85.0.2 in namespace cmc.
//!
//! rping's protocol, per iteration: the client SENDs the address, key and
//! size of its source buffer (16 bytes, big-endian `u64`, `u32`, `u32`);
//! the server RDMA READs it and SENDs a 16-byte go-ahead; the client SENDs
//! the same for its sink buffer; the server RDMA WRITEs what it read there
//! and SENDs a go-ahead; the client compares. The source holds
//! `rdma-ping-<n>: ` and then letters from `A` + n, wrapping after `z`,
//! and a NUL at the end.
//!
//! `rdma_client`/`rdma_server` (port 7471 to us, 7472 to the kernel's):
//! the client SENDs 16 bytes, the server SENDs 16 bytes back, the client
//! disconnects; each exits 0 when all went well.
//!
//! `ucmatose` (port 7473 to us, 7474 to the kernel's; three connections,
//! ten 100-byte messages): once every connection is up, the server SENDs
//! its ten messages on each, the client receives them and SENDs ten back,
//! and the server disconnects every connection.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::{EAGAIN, EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::cma::{
    CmEvent, CmHandler, CmId, CmIdCore, ConnParam, Disposition, EventKind, IpAddr, SockAddr,
};
use rdma::device::{self, DeviceRef};
use rdma::kshim::mem::Buffer;
use rdma::kshim::route::NetNs;
use rdma::kshim::testing;
use rdma::spec::opcodes::{Access, WcOpcode, WcStatus};
use rdma::spec::qp_state::QpType;
use rdma::verbs::cq::Cq;
use rdma::verbs::mr::Mr;
use rdma::verbs::pd::Pd;
use rdma::verbs::qp::{QpCap, QpInitAttr};
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{RecvWr, SendOp, SendWr};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

module! {
    type: RxeCmToolsTest,
    name: "rdma_rxe_cmtools_test",
    author: "rdma-rs developers",
    description: "Selftest: rdma-core's rdma_cm tools against our rdma_cm",
    license: "GPL",
}

/// rping's ping size in the test (`-S`).
const SIZE: usize = 100;
/// Iterations (`-C`).
const COUNT: u32 = 5;
/// Buffer layout: two 16-byte receive slots, a 16-byte send slot, the
/// source (or READ target) and the sink.
const RECV0: usize = 0;
const SEND: usize = 64;
const SRC: usize = 4096;
const SINK: usize = 8192;
const BUF: usize = 16384;

/// rping's source buffer of iteration `ping`.
fn rping_pattern(ping: u32) -> [u8; SIZE] {
    let mut b = [0u8; SIZE];
    let mut w = Writer { buf: &mut b, at: 0 };
    let _ = core::fmt::Write::write_fmt(&mut w, format_args!("rdma-ping-{}: ", ping));
    let mut c = 65 + (ping % 58) as u8;
    for x in b.iter_mut().skip(w_len(ping)) {
        *x = c;
        c += 1;
        if c > 122 {
            c = 65;
        }
    }
    b[SIZE - 1] = 0;
    b
}

/// The length of `rdma-ping-<ping>: `.
fn w_len(ping: u32) -> usize {
    let mut digits = 1;
    let mut p = ping;
    while p >= 10 {
        p /= 10;
        digits += 1;
    }
    "rdma-ping-: ".len() + digits
}

struct Writer<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl core::fmt::Write for Writer<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for b in s.bytes() {
            if let Some(x) = self.buf.get_mut(self.at) {
                *x = b;
                self.at += 1;
            }
        }
        Ok(())
    }
}

/// Events, kept.
#[pin_data]
struct Recorder {
    #[pin]
    seen: Mutex<KVec<CmEvent>>,
}

impl CmHandler for Recorder {
    fn event(&self, _id: &Arc<CmIdCore>, ev: CmEvent) -> Disposition {
        let _ = self.seen.lock().push(ev, GFP_KERNEL);
        Disposition::Keep
    }
}

impl Recorder {
    fn make() -> Result<Arc<Recorder>> {
        Arc::pin_init(
            pin_init!(Recorder {
                seen <- new_mutex!(KVec::new(), "Recorder::seen"),
            }),
            GFP_KERNEL,
        )
    }

    /// Waits (up to `secs`) for an event of `kind`; takes it.
    fn take(&self, kind: EventKind, secs: u32) -> Result<CmEvent> {
        for _ in 0..secs * 100 {
            {
                let mut seen = self.seen.lock();
                if let Some(i) = seen.iter().position(|e| e.kind == kind) {
                    return rdma::kshim::vec::remove(&mut seen, i).ok_or(EINVAL);
                }
                if let Some(e) = seen
                    .iter()
                    .find(|e| matches!(e.kind, EventKind::Rejected | EventKind::Unreachable))
                {
                    pr_err!("waiting for {:?}: {:?} {}\n", kind, e.kind, e.status);
                    return Err(EINVAL);
                }
            }
            testing::msleep(10);
        }
        pr_err!("waited in vain for {:?}\n", kind);
        Err(EAGAIN)
    }

    fn has(&self, kind: EventKind) -> bool {
        self.seen.lock().iter().any(|e| e.kind == kind)
    }

    fn clear(&self) {
        let events = core::mem::take(&mut *self.seen.lock());
        drop(events);
    }
}

/// rxc's objects and the id's QP.
struct Ep {
    buf: Arc<Buffer>,
    mr: Mr,
    cq: Cq,
    pd: Pd,
    dev: DeviceRef,
}

impl Ep {
    fn new() -> Result<Ep> {
        let dev = device::get_by_name(c_str!("rxc")).ok_or(ENODEV)?;
        let pd = Pd::alloc(dev.arc())?;
        let cq = Cq::create(dev.arc(), 256, None)?;
        let buf = Buffer::new(BUF)?;
        let mr = Mr::reg_buffer(
            pd.core(),
            &buf,
            0,
            BUF,
            Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE,
        )?;
        Ok(Ep {
            buf,
            mr,
            cq,
            pd,
            dev,
        })
    }

    fn ns(&self) -> Result<NetNs> {
        let nd = self.dev.netdev(1).ok_or(ENODEV)?;
        NetNs::of(&nd)
    }

    fn make_qp(&self, id: &Arc<CmIdCore>) -> Result {
        id.create_qp(
            self.pd.core(),
            &QpInitAttr {
                qp_type: QpType::Rc,
                send_cq: self.cq.core(),
                recv_cq: self.cq.core(),
                srq: None,
                cap: QpCap {
                    max_send_wr: 16,
                    max_recv_wr: 16,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: true,
                port_num: 1,
            },
        )
    }

    fn post_recv(&self, id: &CmIdCore, slot: usize) -> Result {
        let qp = id.qp().ok_or(EINVAL)?;
        let sg = [self.buf.sge(RECV0 + 16 * slot, 16, self.mr.lkey())?];
        qp.post_recv(&[RecvWr {
            wr_id: slot as u64,
            cqe: None,
            sg: &sg,
        }])
        .map_err(|(_, e)| e)
    }

    /// SENDs rping's 16-byte message: `addr`, `rkey`, `size`.
    fn send_info(&self, id: &CmIdCore, addr: u64, rkey: u32, size: u32) -> Result {
        let mut m = [0u8; 16];
        m[..8].copy_from_slice(&addr.to_be_bytes());
        m[8..12].copy_from_slice(&rkey.to_be_bytes());
        m[12..].copy_from_slice(&size.to_be_bytes());
        self.buf.write(SEND, &m)?;
        let qp = id.qp().ok_or(EINVAL)?;
        let sg = [self.buf.sge(SEND, 16, self.mr.lkey())?];
        qp.post_send(&[SendWr::new(100, SendOp::Send, &sg)])
            .map_err(|(_, e)| e)
    }

    /// READ or WRITE `len` bytes at `off` with the peer's `(addr, rkey)`.
    fn rdma(&self, id: &CmIdCore, write: bool, off: usize, len: u32, remote: (u64, u32)) -> Result {
        let qp = id.qp().ok_or(EINVAL)?;
        let sg = [self.buf.sge(off, len, self.mr.lkey())?];
        let op = if write {
            SendOp::Write {
                remote_addr: remote.0,
                rkey: remote.1,
            }
        } else {
            SendOp::Read {
                remote_addr: remote.0,
                rkey: remote.1,
            }
        };
        qp.post_send(&[SendWr::new(101, op, &sg)])
            .map_err(|(_, e)| e)
    }

    /// The next completion (20 s), or None once `rec` saw DISCONNECTED
    /// and nothing more came.
    fn next(&self, rec: &Recorder) -> Result<Option<Wc>> {
        let mut wc: [Wc; 1] = Default::default();
        for _ in 0..20_000 {
            if self.cq.poll(&mut wc) == 1 {
                return Ok(Some(core::mem::take(&mut wc[0])));
            }
            if rec.has(EventKind::Disconnected) {
                return Ok(None);
            }
            testing::msleep(1);
        }
        Err(EAGAIN)
    }

    /// Waits for a successful completion of `op`; sends complete in order
    /// with the receives we wait for, so others are skipped.
    fn wait(&self, rec: &Recorder, op: WcOpcode) -> Result<Option<Wc>> {
        loop {
            let Some(wc) = self.next(rec)? else {
                return Ok(None);
            };
            if wc.status == WcStatus::WrFlushErr {
                return Ok(None);
            }
            if wc.status != WcStatus::Success {
                pr_err!("completion {:?}: {:?}\n", wc.opcode, wc.status);
                return Err(EINVAL);
            }
            if wc.opcode == op {
                return Ok(Some(wc));
            }
        }
    }

    /// The 16-byte message in receive slot `slot`.
    fn info(&self, slot: usize) -> Result<(u64, u32, u32)> {
        let mut m = [0u8; 16];
        self.buf.read(RECV0 + 16 * slot, &mut m)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(&m[..8]);
        let mut k = [0u8; 4];
        k.copy_from_slice(&m[8..12]);
        let mut s = [0u8; 4];
        s.copy_from_slice(&m[12..]);
        Ok((
            u64::from_be_bytes(a),
            u32::from_be_bytes(k),
            u32::from_be_bytes(s),
        ))
    }
}

fn param() -> ConnParam {
    ConnParam {
        responder_resources: 1,
        initiator_depth: 1,
        retry_count: 7,
        rnr_retry_count: 7,
        ..ConnParam::default()
    }
}

/// We are rping's server: `rping -c -C 5 -S 100 -V` (the script's)
/// connects; each iteration we READ its source, check it is rping's
/// pattern for that iteration, and WRITE it back to its sink; it checks
/// the sink and disconnects after the last.
fn rping_client_to_ours() -> Result {
    let ep = Ep::new()?;
    let rec = Recorder::make()?;
    let listener = CmId::new(ep.ns()?, rec.clone())?;
    listener.bind_addr(SockAddr {
        ip: IpAddr::V4([0; 4]),
        port: 7174,
    })?;
    listener.listen()?;
    pr_info!("rping: listening on 7174\n");
    let mut ev = rec.take(EventKind::ConnectRequest, 60)?;
    let id = ev.new_id.take().ok_or(EINVAL)?;
    ep.make_qp(&id)?;
    ep.post_recv(&id, 0)?;
    ep.post_recv(&id, 1)?;
    id.accept(&param())?;
    rec.take(EventKind::Established, 20)?;
    let mut done = 0u32;
    let mut slot = 0;
    loop {
        // The source's address.
        let Some(_) = ep.wait(&rec, WcOpcode::Recv)? else {
            break;
        };
        let (addr, rkey, size) = ep.info(slot)?;
        ep.post_recv(&id, slot)?;
        slot ^= 1;
        check(size as usize == SIZE, "rping's size")?;
        ep.rdma(&id, false, SRC, size, (addr, rkey))?;
        ep.wait(&rec, WcOpcode::RdmaRead)?.ok_or(EINVAL)?;
        let mut got = [0u8; SIZE];
        ep.buf.read(SRC, &mut got)?;
        if got != rping_pattern(done) {
            pr_err!("rping: iteration {}: not rping's pattern\n", done);
            return check(false, "rping's data");
        }
        ep.send_info(&id, 0, 0, 0)?;
        // The sink's address.
        ep.wait(&rec, WcOpcode::Recv)?.ok_or(EINVAL)?;
        let (addr, rkey, _) = ep.info(slot)?;
        ep.post_recv(&id, slot)?;
        slot ^= 1;
        ep.rdma(&id, true, SRC, size, (addr, rkey))?;
        ep.wait(&rec, WcOpcode::RdmaWrite)?.ok_or(EINVAL)?;
        ep.send_info(&id, 0, 0, 0)?;
        done += 1;
    }
    pr_info!("rping: served {} iterations\n", done);
    check(done == COUNT, "every iteration of rping -c")?;
    let _ = id.disconnect();
    rec.clear();
    drop(id);
    drop(listener);
    Ok(())
}

/// We are rping's client against `rping -s` (the script's): five
/// iterations; each time the sink must come back equal to the source.
fn ours_to_rping_server() -> Result {
    let ep = Ep::new()?;
    let rec = Recorder::make()?;
    let id = CmId::new(ep.ns()?, rec.clone())?;
    id.resolve_addr(
        None,
        SockAddr {
            ip: IpAddr::V4([10, 85, 0, 1]),
            port: 7175,
        },
    )?;
    rec.take(EventKind::AddrResolved, 20)?;
    id.resolve_route()?;
    rec.take(EventKind::RouteResolved, 20)?;
    ep.make_qp(&id)?;
    ep.post_recv(&id, 0)?;
    ep.post_recv(&id, 1)?;
    id.connect(&param())?;
    rec.take(EventKind::Established, 20)?;
    let mut slot = 0;
    for ping in 0..COUNT {
        ep.buf.write(SRC, &rping_pattern(ping))?;
        ep.buf.fill(SINK, SIZE, 0xee)?;
        ep.send_info(&id, ep.buf.addr(SRC), ep.mr.rkey(), SIZE as u32)?;
        ep.wait(&rec, WcOpcode::Recv)?.ok_or(EINVAL)?;
        ep.post_recv(&id, slot)?;
        slot ^= 1;
        ep.send_info(&id, ep.buf.addr(SINK), ep.mr.rkey(), SIZE as u32)?;
        ep.wait(&rec, WcOpcode::Recv)?.ok_or(EINVAL)?;
        ep.post_recv(&id, slot)?;
        slot ^= 1;
        let (mut a, mut b) = ([0u8; SIZE], [0u8; SIZE]);
        ep.buf.read(SRC, &mut a)?;
        ep.buf.read(SINK, &mut b)?;
        check(a == b, "rping -s wrote back what it read")?;
    }
    pr_info!("rping: {} iterations against rping -s\n", COUNT);
    id.disconnect()?;
    rec.take(EventKind::Disconnected, 20)?;
    rec.clear();
    drop(id);
    Ok(())
}

/// We are `rdma_server` for `rdma_client -s 10.85.0.2 -p 7471` (the
/// script's): its 16 bytes in, 16 bytes back, then its disconnect.
fn rdma_client_to_ours() -> Result {
    let ep = Ep::new()?;
    let rec = Recorder::make()?;
    let listener = CmId::new(ep.ns()?, rec.clone())?;
    listener.bind_addr(SockAddr {
        ip: IpAddr::V4([0; 4]),
        port: 7471,
    })?;
    listener.listen()?;
    pr_info!("rdma_server: listening on 7471\n");
    let mut ev = rec.take(EventKind::ConnectRequest, 60)?;
    let id = ev.new_id.take().ok_or(EINVAL)?;
    ep.make_qp(&id)?;
    ep.post_recv(&id, 0)?;
    id.accept(&param())?;
    rec.take(EventKind::Established, 20)?;
    let wc = ep.wait(&rec, WcOpcode::Recv)?.ok_or(EINVAL)?;
    check(wc.byte_len == 16, "rdma_client's 16 bytes")?;
    ep.send_info(&id, 0x7264_6d61_5f73_7276, 0, 16)?;
    ep.wait(&rec, WcOpcode::Send)?.ok_or(EINVAL)?;
    rec.take(EventKind::Disconnected, 20)?;
    pr_info!("rdma_server: served rdma_client\n");
    rec.clear();
    drop(id);
    drop(listener);
    Ok(())
}

/// We are `rdma_client` of `rdma_server -p 7472` (the script's, on the
/// kernel's rxe): 16 bytes out, 16 bytes back, disconnect.
fn ours_to_rdma_server() -> Result {
    let ep = Ep::new()?;
    let rec = Recorder::make()?;
    let id = CmId::new(ep.ns()?, rec.clone())?;
    id.resolve_addr(
        None,
        SockAddr {
            ip: IpAddr::V4([10, 85, 0, 1]),
            port: 7472,
        },
    )?;
    rec.take(EventKind::AddrResolved, 20)?;
    id.resolve_route()?;
    rec.take(EventKind::RouteResolved, 20)?;
    ep.make_qp(&id)?;
    ep.post_recv(&id, 0)?;
    id.connect(&param())?;
    rec.take(EventKind::Established, 20)?;
    ep.send_info(&id, 0x7264_6d61_5f63_6c69, 0, 16)?;
    ep.wait(&rec, WcOpcode::Send)?.ok_or(EINVAL)?;
    let wc = ep.wait(&rec, WcOpcode::Recv)?.ok_or(EINVAL)?;
    check(wc.byte_len == 16, "rdma_server's 16 bytes")?;
    id.disconnect()?;
    rec.take(EventKind::Disconnected, 20)?;
    pr_info!("rdma_client: done with rdma_server\n");
    rec.clear();
    drop(id);
    Ok(())
}

/// ucmatose's connections and messages in the test.
const UCMA_CONNS: usize = 3;
const UCMA_COUNT: usize = 10;
const UCMA_SIZE: u32 = 100;

/// Posts `n` receives of a ucmatose message on `id`'s QP.
fn ucma_recvs(ep: &Ep, id: &CmIdCore, n: usize) -> Result {
    let qp = id.qp().ok_or(EINVAL)?;
    for i in 0..n {
        let sg = [ep.buf.sge(SINK, UCMA_SIZE, ep.mr.lkey())?];
        qp.post_recv(&[RecvWr {
            wr_id: i as u64,
            cqe: None,
            sg: &sg,
        }])
        .map_err(|(_, e)| e)?;
    }
    Ok(())
}

/// Posts ucmatose's messages on `id`'s QP.
fn ucma_sends(ep: &Ep, id: &CmIdCore) -> Result {
    let qp = id.qp().ok_or(EINVAL)?;
    for _ in 0..UCMA_COUNT {
        let sg = [ep.buf.sge(SRC, UCMA_SIZE, ep.mr.lkey())?];
        qp.post_send(&[SendWr::new(7, SendOp::Send, &sg)])
            .map_err(|(_, e)| e)?;
    }
    Ok(())
}

/// Completions seen per connection: sends, receives.
type Counts = [[usize; 2]; UCMA_CONNS];

/// Polls until every connection of `ids` has `want` completions of `op`
/// (a send or a receive), counting the other kind in `seen` too, so that
/// none is lost while the other is awaited.
fn ucma_complete(ep: &Ep, ids: &[CmId], seen: &mut Counts, op: WcOpcode, want: usize) -> Result {
    let k = usize::from(op != WcOpcode::Send);
    let mut wc: [Wc; 8] = Default::default();
    for _ in 0..4000 {
        let n = ep.cq.poll(&mut wc);
        for w in wc.iter().take(n) {
            if w.status != WcStatus::Success {
                pr_err!("ucmatose: completion {:?}: {:?}\n", w.opcode, w.status);
                return Err(EINVAL);
            }
            let kind = match w.opcode {
                WcOpcode::Send => 0,
                WcOpcode::Recv => 1,
                _ => continue,
            };
            if let Some(i) = ids
                .iter()
                .position(|id| id.qp().is_some_and(|q| q.qpn() == w.qp_num))
            {
                seen[i][kind] += 1;
            }
        }
        if seen.iter().take(ids.len()).all(|c| c[k] >= want) {
            return check(
                seen.iter().take(ids.len()).all(|c| c[k] == want),
                "no more than sent",
            );
        }
        if n == 0 {
            testing::msleep(5);
        }
    }
    pr_err!("ucmatose: {:?} completions {:?}, want {}\n", op, seen, want);
    Err(EAGAIN)
}

/// We are ucmatose's server for `ucmatose -s 10.85.0.2 -p 7473 -c 3`
/// (the script's): three connections accepted, ten messages sent on each
/// and ten received back, then we disconnect all.
fn ucmatose_client_to_ours() -> Result {
    let ep = Ep::new()?;
    let rec = Recorder::make()?;
    let listener = CmId::new(ep.ns()?, rec.clone())?;
    listener.bind_addr(SockAddr {
        ip: IpAddr::V4([0; 4]),
        port: 7473,
    })?;
    listener.listen()?;
    pr_info!("ucmatose: listening on 7473\n");
    let mut ids = KVec::new();
    for _ in 0..UCMA_CONNS {
        let mut ev = rec.take(EventKind::ConnectRequest, 60)?;
        let id = ev.new_id.take().ok_or(EINVAL)?;
        ep.make_qp(&id)?;
        ucma_recvs(&ep, &id, UCMA_COUNT)?;
        id.accept(&param())?;
        ids.push(id, GFP_KERNEL)?;
    }
    for _ in 0..UCMA_CONNS {
        rec.take(EventKind::Established, 20)?;
    }
    ep.buf.fill(SRC, UCMA_SIZE as usize, 0x5a)?;
    for id in ids.iter() {
        ucma_sends(&ep, id)?;
    }
    let mut seen: Counts = [[0; 2]; UCMA_CONNS];
    ucma_complete(&ep, &ids, &mut seen, WcOpcode::Send, UCMA_COUNT)?;
    ucma_complete(&ep, &ids, &mut seen, WcOpcode::Recv, UCMA_COUNT)?;
    for id in ids.iter() {
        id.disconnect()?;
    }
    for _ in 0..UCMA_CONNS {
        rec.take(EventKind::Disconnected, 20)?;
    }
    pr_info!("ucmatose: served {} connections\n", UCMA_CONNS);
    rec.clear();
    drop(ids);
    drop(listener);
    Ok(())
}

/// We are ucmatose's client of `ucmatose -p 7474 -c 3` (the script's, on
/// the kernel's rxe): three connections, ten messages received and ten
/// sent back on each; the server disconnects.
fn ours_to_ucmatose_server() -> Result {
    let ep = Ep::new()?;
    let rec = Recorder::make()?;
    let mut ids = KVec::new();
    for _ in 0..UCMA_CONNS {
        let id = CmId::new(ep.ns()?, rec.clone())?;
        id.resolve_addr(
            None,
            SockAddr {
                ip: IpAddr::V4([10, 85, 0, 1]),
                port: 7474,
            },
        )?;
        rec.take(EventKind::AddrResolved, 20)?;
        id.resolve_route()?;
        rec.take(EventKind::RouteResolved, 20)?;
        ep.make_qp(&id)?;
        ucma_recvs(&ep, &id, UCMA_COUNT)?;
        id.connect(&param())?;
        rec.take(EventKind::Established, 20)?;
        ids.push(id, GFP_KERNEL)?;
    }
    let mut seen: Counts = [[0; 2]; UCMA_CONNS];
    ucma_complete(&ep, &ids, &mut seen, WcOpcode::Recv, UCMA_COUNT)?;
    for id in ids.iter() {
        ucma_sends(&ep, id)?;
    }
    ucma_complete(&ep, &ids, &mut seen, WcOpcode::Send, UCMA_COUNT)?;
    for _ in 0..UCMA_CONNS {
        rec.take(EventKind::Disconnected, 20)?;
    }
    for id in ids.iter() {
        let _ = id.disconnect();
    }
    pr_info!(
        "ucmatose: {} connections to ucmatose's server\n",
        UCMA_CONNS
    );
    rec.clear();
    drop(ids);
    Ok(())
}

const CASES: &[FnCase<()>] = &[
    case!("rping_client_to_ours", |()| rping_client_to_ours()),
    case!("ours_to_rping_server", |()| ours_to_rping_server()),
    case!("rdma_client_to_ours", |()| rdma_client_to_ours()),
    case!("ours_to_rdma_server", |()| ours_to_rdma_server()),
    case!("ucmatose_client_to_ours", |()| ucmatose_client_to_ours()),
    case!("ours_to_ucmatose_server", |()| ours_to_ucmatose_server()),
];

struct RxeCmToolsTest;

impl kernel::Module for RxeCmToolsTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut ())?;
        Ok(RxeCmToolsTest)
    }
}
