// SPDX-License-Identifier: GPL-2.0

//! The connected transports, RC and UC, over RoCE v2: one [`RcQp`] per QP,
//! holding what the QP's attributes say about its connection ([`Conn`]),
//! the requester's state (`req.rs`: sending requests; `comp.rs`, the
//! completer, taking ACKs, NAKs and READ/atomic responses under the same
//! lock) and the responder's (`resp.rs`: executing requests, answering
//! them). The lock order is in `Documentation/rxe.rst` ("Locking"):
//! `work` → `req` or `resp` → the core's queue, then CQ, locks → a raw
//! completion handler; `conn` is a leaf. The requester reads a send WQE
//! in the core's ring, under `req` and the queue's lock, and makes its
//! packet there (`req.rs`).
//!
//! Execution: requests go out from the core's per-QP work
//! ([`QpOps::run`]), which also sends READ responses. Packets arrive in
//! softirq context from the namespace's socket, or in the sender's context
//! on the loopback path; the requester and responder states are irq-safe
//! spinlocks, and no lock is held while a packet is sent, since on the
//! loopback path sending means receiving before the call returns. Timers
//! (local ACK timeout, RNR wait) are deadlines the work checks; the core's
//! QP timer ([`ProviderQp::schedule_in`]) wakes it.

use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::provider::{
    sync::SpinLockIrq, udp::RouteCache, Access, AttrMask, Gid, ProviderQp, QpAttr, QpCore, QpOps,
    QpState,
};

use crate::device::RxeDev;
use crate::net::frame::{self, MAX_PAYLOAD};
use crate::net::xmit::{self, SendError, SMALL_ROOM};
use crate::transport::req::ReqState;
use crate::transport::resp::RespState;
use crate::wire::headers::{Bth, ExtHeaders};
use crate::wire::opcode::{Class, Opcode, Transport};
use crate::wire::packet::{Headers, IpHeader, Packet, Udp};
use crate::wire::psn::PSN_MASK;

/// Packets the QP's work sends per run (READ responses and requests
/// together) before it lets other work run.
const RUN_BUDGET: u32 = 256;

/// Packets of one side (READ responses, or requests) in one turn of the
/// QP's work.
const SLICE: u32 = 16;

/// What the QP's attributes say about the connection, kept up to date by
/// `modify` so the packet paths need not query the core.
#[derive(Clone, Copy)]
pub(crate) struct Conn {
    /// IP header template (no identification) towards the remote port;
    /// None until the address vector is set.
    pub(crate) ip: Option<IpHeader>,
    /// The remote port's address.
    pub(crate) dgid: Gid,
    /// Path MTU in bytes.
    pub(crate) mtu: u32,
    /// The remote QP.
    pub(crate) dest_qpn: u32,
    /// Rights granted to the remote QP.
    pub(crate) access: Access,
    /// Local ACK timeout; None for none.
    pub(crate) timeout_us: Option<u64>,
    /// Transport retries.
    pub(crate) retry_cnt: u8,
    /// RNR retries (7: without limit).
    pub(crate) rnr_retry: u8,
    /// The RNR timer code the responder advertises.
    pub(crate) min_rnr_timer: u8,
    /// Outstanding READs/atomics as requester (at least 1).
    pub(crate) max_rd_atomic: u32,
    /// READs and FLUSHes queued at once as responder (at least 1, at
    /// most `resp::MAX_READS`).
    pub(crate) max_dest_rd_atomic: u32,
}

impl Default for Conn {
    fn default() -> Self {
        Conn {
            ip: None,
            dgid: Gid::default(),
            mtu: 1024,
            dest_qpn: 0,
            access: Access::NONE,
            timeout_us: None,
            retry_cnt: 0,
            rnr_retry: 0,
            min_rnr_timer: 0,
            max_rd_atomic: 1,
            max_dest_rd_atomic: 1,
        }
    }
}

/// The work's own buffers (only the work uses them, one run at a time).
pub(crate) struct WorkBuf {
    /// The headers of the packet under construction (`xmit::SMALL_ROOM`:
    /// payload and trailer go to the network stack where they are).
    pub(crate) pkt: KVec<u8>,
    /// The payload it is built from.
    pub(crate) payload: KVec<u8>,
}

/// An RC or UC QP's transport.
#[pin_data]
pub(crate) struct RcQp {
    pub(crate) rd: Arc<RxeDev>,
    /// UC rather than RC.
    pub(crate) uc: bool,
    #[pin]
    pub(crate) conn: SpinLockIrq<Conn>,
    #[pin]
    pub(crate) req: SpinLockIrq<ReqState>,
    #[pin]
    pub(crate) resp: SpinLockIrq<RespState>,
    #[pin]
    pub(crate) work: Mutex<KBox<WorkBuf>>,
    /// The route to the peer, looked up once (reset when the AV changes).
    pub(crate) route: RouteCache,
}

/// A packet to send, described by its headers' variable parts.
pub(crate) struct Out {
    pub(crate) opcode: Opcode,
    pub(crate) psn: u32,
    pub(crate) ack_req: bool,
    pub(crate) solicited: bool,
    pub(crate) ext: ExtHeaders,
}

impl RcQp {
    pub(crate) fn new(rd: Arc<RxeDev>, uc: bool, max_send_wr: u32) -> Result<Arc<RcQp>> {
        let work = KBox::new(
            WorkBuf {
                pkt: KVec::from_elem(0u8, SMALL_ROOM, GFP_KERNEL)?,
                payload: KVec::from_elem(0u8, MAX_PAYLOAD, GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )?;
        let req = ReqState::new(max_send_wr as usize)?;
        let resp = RespState::new()?;
        let route = RouteCache::new()?;
        Arc::pin_init(
            pin_init!(RcQp {
                rd,
                uc,
                conn <- rdma::provider::new_spinlock_irq!(Conn::default(), "RcQp::conn"),
                req <- rdma::provider::new_spinlock_irq!(req, "RcQp::req"),
                resp <- rdma::provider::new_spinlock_irq!(resp, "RcQp::resp"),
                work <- new_mutex!(work, "RcQp::work"),
                route,
            }),
            GFP_KERNEL,
        )
    }

    /// The connection as last modified.
    pub(crate) fn conn(&self) -> Conn {
        *self.conn.lock()
    }

    /// Builds and sends one packet of `qp` on `conn`. Any context; no
    /// lock of this QP may be held.
    pub(crate) fn send(
        &self,
        qp: &ProviderQp,
        conn: &Conn,
        out: Out,
        payload: &[u8],
        buf: &mut [u8],
    ) -> core::result::Result<(), SendError> {
        let headers = self.headers(qp, conn, out).ok_or(SendError::Build)?;
        xmit::send(&self.rd, Some(&self.route), &headers, payload, buf)
    }

    /// The headers of packet `out` of `qp` on `conn` (None before the
    /// address vector is set).
    pub(crate) fn headers(&self, qp: &ProviderQp, conn: &Conn, out: Out) -> Option<Headers> {
        let mut ip = conn.ip?;
        if let IpHeader::V4(v4) = &mut ip {
            v4.id = self.rd.next_ip_id();
        }
        Some(Headers {
            ip,
            udp: Udp {
                src_port: xmit::source_port(qp.qpn()),
                checksum: 0,
            },
            bth: Bth {
                opcode: out.opcode as u8,
                solicited: out.solicited,
                pkey: 0xffff,
                dest_qpn: conn.dest_qpn,
                ack_req: out.ack_req,
                psn: out.psn & PSN_MASK,
                ..Bth::default()
            },
            ext: out.ext,
        })
    }

    /// A packet for this QP arrived (softirq, or the sender's context on
    /// the loopback path): whether it was taken.
    pub(crate) fn receive(&self, qp: &ProviderQp, pkt: &Packet<'_>) -> bool {
        let want = if self.uc {
            Transport::Uc
        } else {
            Transport::Rc
        };
        if pkt.opcode.transport() != want {
            return false;
        }
        // Only the connected peer may talk to a connected QP.
        let conn = self.conn();
        if conn.ip.is_none() || frame::src_gid(&pkt.headers.ip) != conn.dgid {
            return false;
        }
        match pkt.info().class {
            Class::Request => self.responder_receive(qp, &conn, pkt),
            Class::ReadResponse | Class::Ack if !self.uc => self.completer_receive(qp, &conn, pkt),
            _ => false,
        }
    }

    /// Records the attributes the packet paths use.
    fn update_conn(&self, qp: &ProviderQp, attr: &QpAttr, mask: AttrMask) -> Result {
        let mut c = self.conn();
        if mask.contains(AttrMask::AV) {
            let dev = qp.device();
            let av = &attr.ah_attr;
            let sgid = dev
                .query_gid(av.port_num, u32::from(av.grh.sgid_index))
                .map_err(|_| EINVAL)?;
            c.ip = Some(
                frame::ip_header(
                    &sgid.gid,
                    &av.grh.dgid,
                    av.grh.traffic_class,
                    av.grh.hop_limit,
                )
                .ok_or(EINVAL)?,
            );
            c.dgid = av.grh.dgid;
            self.route.reset();
        }
        if mask.contains(AttrMask::PATH_MTU) {
            c.mtu = attr.path_mtu.bytes();
        }
        if mask.contains(AttrMask::DEST_QPN) {
            c.dest_qpn = attr.dest_qp_num;
        }
        if mask.contains(AttrMask::ACCESS_FLAGS) {
            c.access = attr.qp_access_flags;
        }
        if mask.contains(AttrMask::TIMEOUT) {
            c.timeout_us = crate::wire::segment::ack_timeout_usec(attr.timeout);
        }
        if mask.contains(AttrMask::RETRY_CNT) {
            c.retry_cnt = attr.retry_cnt;
        }
        if mask.contains(AttrMask::RNR_RETRY) {
            c.rnr_retry = attr.rnr_retry;
        }
        if mask.contains(AttrMask::MIN_RNR_TIMER) {
            c.min_rnr_timer = attr.min_rnr_timer;
        }
        if mask.contains(AttrMask::MAX_QP_RD_ATOMIC) {
            c.max_rd_atomic = u32::from(attr.max_rd_atomic).max(1);
        }
        if mask.contains(AttrMask::MAX_DEST_RD_ATOMIC) {
            c.max_dest_rd_atomic = u32::from(attr.max_dest_rd_atomic)
                .clamp(1, crate::transport::resp::MAX_READS as u32);
        }
        *self.conn.lock() = c;
        Ok(())
    }
}

impl QpOps for RcQp {
    fn modify(&self, qp: &ProviderQp, attr: &QpAttr, mask: AttrMask) -> Result {
        self.update_conn(qp, attr, mask)?;
        if !mask.contains(AttrMask::STATE) {
            return Ok(());
        }
        let c = self.conn();
        match attr.qp_state {
            QpState::Reset => {
                self.req_reset();
                self.resp_reset();
            }
            QpState::Rtr if qp.state() == QpState::Init => {
                let rq_psn = if mask.contains(AttrMask::RQ_PSN) {
                    attr.rq_psn
                } else {
                    qp.attr().rq_psn
                };
                self.resp_start(rq_psn);
            }
            QpState::Rts if qp.state() == QpState::Rtr => {
                let sq_psn = if mask.contains(AttrMask::SQ_PSN) {
                    attr.sq_psn
                } else {
                    qp.attr().sq_psn
                };
                self.req_start(sq_psn, &c);
            }
            QpState::Err => {
                self.req_stop();
                self.resp_flush(qp);
            }
            _ => {}
        }
        Ok(())
    }

    /// The QP's work: READ responses and requests in turns of [`SLICE`]
    /// packets each, so that neither waits behind a long run of the other
    /// (a READ whose responses waited behind a run of requests timed out
    /// at its requester, again and again, under load); after
    /// [`RUN_BUDGET`] packets the work is queued again, to let other work
    /// run first.
    fn run(&self, qp: &ProviderQp) {
        let mut work = self.work.lock();
        for _ in 0..RUN_BUDGET / SLICE {
            let responses = self.send_read_responses(qp, &mut work, SLICE);
            let requests = self.requester_run(qp, &mut work, SLICE);
            if !responses && !requests {
                return;
            }
        }
        qp.schedule();
    }

    fn destroy(&self, _qp: &QpCore) {
        self.req_stop();
        self.resp_reset();
    }
}
