// SPDX-License-Identifier: GPL-2.0

//! The UD transport over RoCE v2 (IPv4 and IPv6): SEND (with immediate)
//! out through the netdev, and received UD packets delivered to their QP.
//!
//! Sending runs in the core's per-QP work (`QpOps::run`): each send queue
//! entry becomes one packet (UD messages fit one MTU), built with the
//! host-tested codec and sent through `xmit.rs`. The entry is read where it
//! lies, under the core's send queue lock (its destination and flags
//! copied, its payload gathered into the work's buffer), and the packet is
//! sent after that lock is released, since sending may deliver on the
//! loopback path before it returns. A received UD packet
//! (from `recv.rs`, softirq or loopback) is checked against the QP's state
//! and Q_Key, and its GRH and payload scattered into the next receive WQE
//! (one too short keeps the QP in RTS: the datagram is dropped, or an
//! SRQ's WQE completes with an error).
//! QP1 (GSI) is a UD QP whose sends carry the GSI Q_Key (0x80010000)
//! whatever the work request says, and whose receives require it.

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::provider::ratelimit::log_allowed;
use rdma::provider::{
    AhAttr, Gid, ProviderDevice, ProviderQp, QpCore, QpOps, QpState, QpType, RqTake, SendFlags,
    SendWqe, Wc, WcFlags, WcOpcode, WcStatus,
};

use crate::counters::Counter;
use crate::device::RxeDev;
use crate::net::frame::{self, MAX_PAYLOAD};
use crate::net::xmit::{self, PACKET_ROOM};
use crate::wire::headers::{Bth, Deth, ExtHeaders, ImmDt};
use crate::wire::opcode::Opcode;
use crate::wire::packet::{Headers, IpHeader, Packet, Udp};

/// Bytes of the GRH in front of UD receive data.
const GRH_LEN: usize = 40;

/// The QP1 Q_Key (GSI), which a UD QP can never be given.
const GSI_QKEY: u32 = 0x8001_0000;

/// A UD QP's transport.
#[pin_data]
pub(crate) struct UdQp {
    rd: Arc<RxeDev>,
    psn: AtomicU32,
    /// The packet under construction, then the payload it is built from
    /// (the work runs one at a time per QP).
    #[pin]
    buf: Mutex<KVec<u8>>,
}

impl UdQp {
    pub(crate) fn new(rd: Arc<RxeDev>) -> Result<Arc<UdQp>> {
        let buf = KVec::from_elem(0u8, PACKET_ROOM + MAX_PAYLOAD, GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(UdQp {
                rd,
                psn: AtomicU32::new(0),
                buf <- new_mutex!(buf, "UdQp::buf"),
            }),
            GFP_KERNEL,
        )
    }

    /// Reads send WQE `w` under the send queue's lock: what its packet
    /// needs, its payload gathered into `payload` unless it is longer than
    /// `mtu` (not sent, then). Reads memory and nothing else.
    fn prepare(qp: &ProviderQp, w: &SendWqe, mtu: usize, payload: &mut [u8]) -> Prepared {
        let len = w.length as usize;
        let too_long = len > mtu || len > MAX_PAYLOAD;
        let dest = w.ud.as_ref().map(|d| Dest {
            av: d.ah.query(),
            remote_qpn: d.remote_qpn,
            remote_qkey: d.remote_qkey,
        });
        let gathered = if dest.is_none() || too_long {
            true
        } else if w.inline {
            payload[..len].copy_from_slice(&w.inline_data[..len]);
            true
        } else {
            qp.gather(w.sges(), 0, &mut payload[..len]).is_ok()
        };
        Prepared {
            length: w.length,
            dest,
            too_long,
            gathered,
            imm: w.op.imm(),
            solicited: w.flags.contains(SendFlags::SOLICITED),
        }
    }

    /// Sends one request made by [`UdQp::prepare`], with no lock held: the
    /// sender's completion status.
    fn send(
        &self,
        qp: &ProviderQp,
        dev: Option<&ProviderDevice>,
        w: &Prepared,
        out: &mut [u8],
    ) -> WcStatus {
        let Some(dev) = dev else {
            return WcStatus::FatalErr;
        };
        let Some(dest) = &w.dest else {
            return WcStatus::LocQpOpErr;
        };
        let av = &dest.av;
        let Ok(sgid) = dev.query_gid(av.port_num, u32::from(av.grh.sgid_index)) else {
            return WcStatus::LocQpOpErr;
        };
        let Some(mut ip) = frame::ip_header(
            &sgid.gid,
            &av.grh.dgid,
            av.grh.traffic_class,
            av.grh.hop_limit,
        ) else {
            // An IPv4 source with an IPv6 destination, or the reverse.
            return WcStatus::LocQpOpErr;
        };
        if let IpHeader::V4(v4) = &mut ip {
            v4.id = self.rd.next_ip_id();
        }
        if w.too_long {
            // Longer than the path MTU: not sent, and completed with
            // success, as the kernel's rxe does (IBTA C10-93.1.1 leaves the
            // choice); the QP goes on.
            return WcStatus::Success;
        }
        if !w.gathered {
            return WcStatus::LocProtErr;
        }
        // The payload is in the second half of the buffer; the codec writes
        // the whole packet into the first.
        let (front, payload) = out.split_at_mut(PACKET_ROOM);
        let payload = &payload[..w.length as usize];
        let opcode = if w.imm.is_some() {
            Opcode::UdSendOnlyWithImmediate
        } else {
            Opcode::UdSendOnly
        };
        let psn = self.psn.fetch_add(1, Ordering::Relaxed) & 0xff_ffff;
        let headers = Headers {
            ip,
            udp: Udp {
                src_port: xmit::source_port(qp.qpn()),
                checksum: 0,
            },
            bth: Bth {
                opcode: opcode as u8,
                solicited: w.solicited,
                pkey: 0xffff,
                dest_qpn: dest.remote_qpn,
                psn,
                // The C rxe asks for an ACK on the last packet of every
                // QP type but UD and UC, so on QP1's datagrams too; the
                // bit means nothing to a UD receiver, but the packets
                // match the C stack's byte for byte.
                ack_req: qp.qp_type() == QpType::Gsi,
                ..Bth::default()
            },
            ext: ExtHeaders {
                deth: Some(Deth {
                    // QP1 always sends with the GSI Q_Key (IBTA 13.5.1), as
                    // the C rxe does, whatever the work request says.
                    qkey: if qp.qp_type() == QpType::Gsi {
                        GSI_QKEY
                    } else {
                        dest.remote_qkey
                    },
                    resv8: 0,
                    src_qpn: qp.qpn(),
                }),
                immdt: w.imm.map(|imm| ImmDt { imm }),
                ..ExtHeaders::default()
            },
        };
        // A packet the network drops is lost, as UD allows: the request
        // still completes, unless it could not be built at all.
        match xmit::send(&self.rd, None, &headers, payload, front) {
            Err(xmit::SendError::Build) => WcStatus::LocLenErr,
            _ => WcStatus::Success,
        }
    }
}

/// Where a UD request goes, read from its WQE.
struct Dest {
    av: AhAttr,
    remote_qpn: u32,
    remote_qkey: u32,
}

/// What sending a UD request needs of its WQE, read under the send
/// queue's lock ([`UdQp::prepare`]).
struct Prepared {
    length: u32,
    /// None when the WQE has no destination.
    dest: Option<Dest>,
    /// Longer than the path MTU (the payload was not gathered).
    too_long: bool,
    /// The payload is in the buffer (or was not needed); false when
    /// local memory refused it.
    gathered: bool,
    imm: Option<u32>,
    solicited: bool,
}

impl QpOps for UdQp {
    fn mcast(&self, qp: &ProviderQp, gid: &Gid, attach: bool) -> Result {
        if attach {
            self.rd.mcast.attach(&self.rd.netdev, gid, qp.qpn())
        } else {
            self.rd.mcast.detach(&self.rd.netdev, gid, qp.qpn())
        }
    }

    fn destroy(&self, qp: &QpCore) {
        self.rd.mcast.detach_all(&self.rd.netdev, qp.qpn());
    }

    fn run(&self, qp: &ProviderQp) {
        let mut buf = self.buf.lock();
        loop {
            // Read before the WQE is taken: `query_port` may sleep, and
            // the WQE is read under the send queue's lock.
            let dev = self.rd.device();
            let mtu = dev.as_ref().map_or(256, |d| {
                d.query_port(1)
                    .map(|p| p.active_mtu.bytes() as usize)
                    .unwrap_or(256)
            });
            let payload = &mut buf[PACKET_ROOM..];
            let Some(w) = qp.sq_take_with(|w| Self::prepare(qp, w, mtu, payload)) else {
                break;
            };
            let status = self.send(qp, dev.as_ref(), &w, &mut buf[..]);
            qp.sq_complete(status, w.length);
        }
    }
}

/// Delivers a UD packet to `qp`: whether it was taken.
pub(crate) fn deliver(qp: &ProviderQp, pkt: &Packet<'_>, frame: &[u8]) -> Result<(), Counter> {
    if !matches!(
        pkt.opcode,
        Opcode::UdSendOnly | Opcode::UdSendOnlyWithImmediate
    ) || !matches!(qp.qp_type(), QpType::Ud | QpType::Gsi)
        || !matches!(qp.state(), QpState::Rtr | QpState::Rts | QpState::Sqd)
    {
        return Err(Counter::RxDropQp);
    }
    let Some(deth) = pkt.headers.ext.deth else {
        return Err(Counter::RxDropQp);
    };
    let want_qkey = if qp.qp_type() == QpType::Gsi {
        GSI_QKEY
    } else {
        qp.attr().qkey
    };
    if deth.qkey != want_qkey {
        return Err(Counter::RxDropQkey);
    }
    let payload = pkt.payload;
    let need = (payload.len() + GRH_LEN) as u64;
    // Too long for the receive, as the C rxe answers it: the QP's own
    // entry stays for the next datagram (the datagram is dropped); an
    // SRQ's completes with REM_INV_REQ_ERR. The QP stays in its state
    // either way (a datagram must not take down QP1 or a multicast group).
    let short = match qp.rq_take_for(need) {
        RqTake::Fits(w) => Ok(w),
        RqTake::Short(w) => Err(w),
        // No receive posted: UD drops.
        RqTake::Empty => return Err(Counter::RxDropQp),
    };
    let mut wc = Wc {
        opcode: WcOpcode::Recv,
        status: WcStatus::Success,
        byte_len: (payload.len() + GRH_LEN) as u32,
        src_qp: deth.src_qpn,
        wc_flags: WcFlags::GRH | WcFlags::WITH_NETWORK_HDR_TYPE,
        network_hdr_type: if matches!(pkt.headers.ip, IpHeader::V4(_)) {
            2
        } else {
            3
        },
        port_num: 1,
        ..Wc::default()
    };
    if let Some(imm) = pkt.headers.ext.immdt {
        wc.wc_flags = wc.wc_flags | WcFlags::WITH_IMM;
        wc.imm_data = imm.imm;
    }
    let rwqe = match short {
        Ok(w) => w,
        Err(w) => {
            if let Some(w) = w {
                wc.status = WcStatus::RemInvReqErr;
                wc.byte_len = 0;
                qp.complete_recv_nonfatal(w, wc);
            }
            if log_allowed() {
                pr_info!(
                    "QP {}: a {} byte datagram does not fit its receive\n",
                    qp.qpn(),
                    payload.len()
                );
            }
            return Err(Counter::LengthErr);
        }
    };
    // RoCE v2 over IPv4: 20 unused bytes, then the IPv4 header; over
    // IPv6 the GRH is the IPv6 header.
    let mut grh = [0u8; GRH_LEN];
    match pkt.headers.ip {
        IpHeader::V4(_) => grh[20..].copy_from_slice(&frame[..20]),
        IpHeader::V6(_) => grh.copy_from_slice(&frame[..GRH_LEN]),
    }
    let ok = qp.scatter(rwqe.sges(), 0, &grh).is_ok()
        && qp.scatter(rwqe.sges(), GRH_LEN as u64, payload).is_ok();
    if !ok {
        // Receive memory that does not check out (a bad lkey, an SGE
        // outside its MR): as the C rxe (its malformed WQE, class A), the
        // WQE completes with LOC_QP_OP_ERR and the QP goes to the error
        // state (`complete_recv` with an error status).
        wc.status = WcStatus::LocQpOpErr;
    }
    qp.complete_recv(rwqe, wc, pkt.headers.bth.solicited);
    ok.then_some(()).ok_or(Counter::RxDropQp)
}
