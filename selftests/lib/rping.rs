// SPDX-License-Identifier: GPL-2.0

//! rping's protocol (rdma-core's `librdmacm/examples/rping.c`) on our
//! rdma_cm, for the test modules that meet rping or each other with it:
//! a device's objects ([`Ep`]), an event recorder, the server
//! ([`serve`]) and the client ([`ping`]); and the connect sequence the
//! rdma_cm test modules share ([`CmPair`], [`listen`], [`client_id`], [`request_pair`],
//! [`accept_pair`], [`connect_pair`]).
//!
//! Per iteration: the client SENDs the address, key and size of its
//! source buffer (16 bytes, big-endian `u64`, `u32`, `u32`); the server
//! RDMA READs it and SENDs a 16-byte go-ahead; the client SENDs the same
//! for its sink buffer; the server RDMA WRITEs what it read there and
//! SENDs a go-ahead; the client compares. The source holds
//! `rdma-ping-<n>: ` and then letters from `A` + n, wrapping after `z`,
//! and a NUL at the end.

use kernel::c_str;
use kernel::error::code::{EAGAIN, EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::cma::{
    CmEvent, CmHandler, CmId, CmIdCore, ConnParam, Disposition, EventKind, IpAddr, SockAddr,
};
use rdma::device::{self, DeviceRef};
use rdma::kshim::mem::Buffer;
use rdma::kshim::route::NetNs;
use rdma::kshim::time;
use rdma::spec::opcodes::{Access, WcOpcode, WcStatus};
use rdma::spec::qp_state::QpType;
use rdma::verbs::cq::Cq;
use rdma::verbs::mr::Mr;
use rdma::verbs::pd::Pd;
use rdma::verbs::qp::{QpCap, QpInitAttr};
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{RecvWr, SendOp, SendWr};

use crate::ktap::check;

/// rping's ping size in the test (`-S`).
pub(crate) const SIZE: usize = 100;
/// Iterations (`-C`).
pub(crate) const COUNT: u32 = 5;
/// Buffer layout: two 16-byte receive slots, a 16-byte send slot, the
/// source (or READ target) and the sink.
pub(crate) const RECV0: usize = 0;
pub(crate) const SEND: usize = 64;
pub(crate) const SRC: usize = 4096;
pub(crate) const SINK: usize = 8192;
pub(crate) const BUF: usize = 16384;

/// rping's source buffer of iteration `ping`.
pub(crate) fn rping_pattern(ping: u32) -> [u8; SIZE] {
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
pub(crate) struct Recorder {
    #[pin]
    pub(crate) seen: Mutex<KVec<CmEvent>>,
}

impl CmHandler for Recorder {
    fn event(&self, _id: &Arc<CmIdCore>, ev: CmEvent) -> Disposition {
        let _ = self.seen.lock().push(ev, GFP_KERNEL);
        Disposition::Keep
    }
}

/// A recorder, emptied when dropped: the ids inside its events (new ids
/// of connection requests) go, and with them the recorder's last users.
pub(crate) struct Rec(pub(crate) Arc<Recorder>);

impl core::ops::Deref for Rec {
    type Target = Arc<Recorder>;

    fn deref(&self) -> &Arc<Recorder> {
        &self.0
    }
}

impl Drop for Rec {
    fn drop(&mut self) {
        self.clear();
    }
}

impl Recorder {
    pub(crate) fn make() -> Result<Rec> {
        Ok(Rec(Arc::pin_init(
            pin_init!(Recorder {
                seen <- new_mutex!(KVec::new(), "Recorder::seen"),
            }),
            GFP_KERNEL,
        )?))
    }

    /// Waits (up to `secs`) for an event of `kind`; takes it. Fails at
    /// once when a connection or resolution failure shows up instead.
    pub(crate) fn take(&self, kind: EventKind, secs: u32) -> Result<CmEvent> {
        for _ in 0..secs * 100 {
            {
                let mut seen = self.seen.lock();
                if let Some(i) = seen.iter().position(|e| e.kind == kind) {
                    return rdma::kshim::vec::remove(&mut seen, i).ok_or(EINVAL);
                }
                if let Some(e) = seen.iter().find(|e| {
                    e.kind != kind
                        && matches!(
                            e.kind,
                            EventKind::Rejected
                                | EventKind::Unreachable
                                | EventKind::AddrError
                                | EventKind::RouteError
                        )
                }) {
                    pr_err!("waiting for {:?}: {:?} {}\n", kind, e.kind, e.status);
                    return Err(EINVAL);
                }
            }
            time::msleep(10);
        }
        pr_err!("waited in vain for {:?}\n", kind);
        Err(EAGAIN)
    }

    pub(crate) fn has(&self, kind: EventKind) -> bool {
        self.seen.lock().iter().any(|e| e.kind == kind)
    }

    pub(crate) fn clear(&self) {
        let events = core::mem::take(&mut *self.seen.lock());
        drop(events);
    }
}

/// A device's objects for the connections of a case.
pub(crate) struct Ep {
    pub(crate) buf: Arc<Buffer>,
    pub(crate) mr: Mr,
    pub(crate) cq: Cq,
    pub(crate) pd: Pd,
    pub(crate) dev: DeviceRef,
}

impl Ep {
    /// PD, CQ and a registered buffer on device `name`.
    pub(crate) fn new(name: &CStr) -> Result<Ep> {
        let dev = device::get_by_name(name).ok_or(ENODEV)?;
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

    pub(crate) fn ns(&self) -> Result<NetNs> {
        let nd = self.dev.netdev(1).ok_or(ENODEV)?;
        NetNs::of(&nd)
    }

    pub(crate) fn make_qp(&self, id: &Arc<CmIdCore>) -> Result {
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

    pub(crate) fn post_recv(&self, id: &CmIdCore, slot: usize) -> Result {
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
    pub(crate) fn send_info(&self, id: &CmIdCore, addr: u64, rkey: u32, size: u32) -> Result {
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
    pub(crate) fn rdma(
        &self,
        id: &CmIdCore,
        write: bool,
        off: usize,
        len: u32,
        remote: (u64, u32),
    ) -> Result {
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
    /// and nothing more came for a while (what the peer sent before its
    /// DREQ may complete after the DREQ is handled).
    pub(crate) fn next(&self, rec: &Recorder) -> Result<Option<Wc>> {
        let mut wc: [Wc; 1] = Default::default();
        let mut quiet = 0;
        for _ in 0..20_000 {
            if self.cq.poll(&mut wc) == 1 {
                return Ok(Some(core::mem::take(&mut wc[0])));
            }
            if rec.has(EventKind::Disconnected) {
                quiet += 1;
                if quiet > 200 {
                    return Ok(None);
                }
            }
            time::msleep(1);
        }
        Err(EAGAIN)
    }

    /// Waits for a successful completion of `op`; sends complete in order
    /// with the receives we wait for, so others are skipped.
    pub(crate) fn wait(&self, rec: &Recorder, op: WcOpcode) -> Result<Option<Wc>> {
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
    pub(crate) fn info(&self, slot: usize) -> Result<(u64, u32, u32)> {
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

pub(crate) fn param() -> ConnParam {
    ConnParam {
        responder_resources: 1,
        initiator_depth: 1,
        retry_count: 7,
        rnr_retry_count: 7,
        ..ConnParam::default()
    }
}

/// `rxa` and `rxb` of an rxe suite, a recorder each, and a listener on
/// `rxb`: what the rdma_cm test modules between the two start from.
/// Fields in destruction order.
pub(crate) struct CmPair {
    pub(crate) a: Ep,
    pub(crate) b: Ep,
    pub(crate) ra: Rec,
    pub(crate) rb: Rec,
    _listener: CmId,
}

impl CmPair {
    /// The two devices' objects and a listener on `rxb`'s port `port`.
    pub(crate) fn new(port: u16) -> Result<CmPair> {
        let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
        let (ra, rb) = (Recorder::make()?, Recorder::make()?);
        let listener = listen(&b, &rb, port)?;
        Ok(CmPair {
            a,
            b,
            ra,
            rb,
            _listener: listener,
        })
    }
}

/// A listener on `ep`'s namespace, port `port` of any address, its
/// events to `rec`.
pub(crate) fn listen(ep: &Ep, rec: &Rec, port: u16) -> Result<CmId> {
    let listener = CmId::new(ep.ns()?, rec.0.clone())?;
    listener.bind_addr(SockAddr {
        ip: IpAddr::V4([0; 4]),
        port,
    })?;
    listener.listen()?;
    Ok(listener)
}

/// A client id in `ns` (`ep`'s device's namespace), its events to `rec`,
/// towards `dst` (from `src` if given): address and route resolved and
/// its QP made on `ep`, not yet connecting.
pub(crate) fn client_id(
    ep: &Ep,
    ns: NetNs,
    rec: &Rec,
    src: Option<SockAddr>,
    dst: SockAddr,
) -> Result<CmId> {
    let id = CmId::new(ns, rec.0.clone())?;
    id.resolve_addr(src, dst)?;
    rec.take(EventKind::AddrResolved, 20)?;
    id.resolve_route()?;
    rec.take(EventKind::RouteResolved, 20)?;
    ep.make_qp(&id)?;
    Ok(id)
}

/// A connection from `a` (events to `ra`) to a listener of `b`'s (events
/// to `rb`) at `dst`, up to the connect request at `b`, not accepted:
/// the client's id and the server's, each with its QP.
pub(crate) fn request_pair(
    (a, ra): (&Ep, &Rec),
    (b, rb): (&Ep, &Rec),
    dst: SockAddr,
) -> Result<(CmId, CmId)> {
    let client = client_id(a, a.ns()?, ra, None, dst)?;
    client.connect(&param())?;
    let mut ev = rb.take(EventKind::ConnectRequest, 20)?;
    let server = ev.new_id.take().ok_or(EINVAL)?;
    b.make_qp(&server)?;
    Ok((client, server))
}

/// The server's side (events to `rb`) accepts; both ends, the client's
/// events to `ra`, see Established.
pub(crate) fn accept_pair(server: &CmId, ra: &Rec, rb: &Rec) -> Result {
    server.accept(&param())?;
    ra.take(EventKind::Established, 20)?;
    rb.take(EventKind::Established, 20)?;
    Ok(())
}

/// A connection from `a` to a listener of `b`'s at `dst`, established at
/// both ends ([`request_pair`], then [`accept_pair`]): the client's id and
/// the server's.
pub(crate) fn connect_pair(
    (a, ra): (&Ep, &Rec),
    (b, rb): (&Ep, &Rec),
    dst: SockAddr,
) -> Result<(CmId, CmId)> {
    let (client, server) = request_pair((a, ra), (b, rb), dst)?;
    accept_pair(&server, ra, rb)?;
    Ok((client, server))
}

/// rping's server on `ep`'s device, port `port` of any address of its
/// namespace, for one client: each iteration we READ its source, check it
/// is rping's pattern for that iteration, and WRITE it back to its sink;
/// the client checks the sink and disconnects after its last. Returns the
/// iterations served. The client must come within `wait_s` seconds.
pub(crate) fn serve(ep: &Ep, port: u16, wait_s: u32) -> Result<u32> {
    let rec = Recorder::make()?;
    let listener = CmId::new(ep.ns()?, rec.clone())?;
    listener.bind_addr(SockAddr {
        ip: IpAddr::V4([0; 4]),
        port,
    })?;
    listener.listen()?;
    pr_info!("rping: listening on {}\n", port);
    let mut ev = rec.take(EventKind::ConnectRequest, wait_s)?;
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
            check(false, "rping's data")?;
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
    let _ = id.disconnect();
    drop(id);
    drop(listener);
    Ok(done)
}

/// rping's client on `ep`'s device to the server at `dst`: [`COUNT`]
/// iterations; each time the sink must come back equal to the source.
pub(crate) fn ping(ep: &Ep, dst: SockAddr) -> Result {
    let rec = Recorder::make()?;
    let id = CmId::new(ep.ns()?, rec.clone())?;
    id.resolve_addr(None, dst)?;
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
    pr_info!("rping: {} iterations against {:?}\n", COUNT, dst);
    id.disconnect()?;
    rec.take(EventKind::Disconnected, 20)?;
    drop(id);
    Ok(())
}
