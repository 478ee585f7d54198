// SPDX-License-Identifier: GPL-2.0

//! The UD transport over RoCE v2 (IPv4 and IPv6): SEND (with immediate)
//! out through the netdev, and received UD packets delivered to their QP.
//!
//! Sending runs in the core's per-QP work (`QpOps::run`): each send queue
//! entry becomes one packet (UD messages fit one MTU), built with the
//! host-tested codec and handed to the IP stack of the netdev's namespace.
//! Receiving runs in softirq context from the namespace's UDP socket
//! (`sockets.rs`): the packet is parsed as hostile input (bad ICRC,
//! truncation, unknown opcode: dropped and counted), matched to a device by
//! its destination address and to a QP by its BTH, checked against the
//! QP's state and Q_Key, and its GRH and payload scattered into the next
//! receive WQE.

use core::sync::atomic::{AtomicU16, AtomicU32, Ordering};

use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::attr::Gid;
use rdma::mr;
use rdma::qp::{QpCore, QpOps};
use rdma::qp_state::{QpState, QpType};
use rdma::verbs::{SendFlags, WcFlags, WcOpcode, WcStatus, WrOpcode};
use rdma::wc::Wc;
use rdma::wr::SendWqe;

use crate::device::RxeDev;
use crate::proto::headers::{Bth, Deth, ExtHeaders, ImmDt};
use crate::proto::opcode::Opcode;
use crate::proto::packet::{self, Headers, IpHeader, Ipv4, Ipv6, Packet, Udp};

/// The largest UD payload: the largest IB MTU.
pub(crate) const MAX_PAYLOAD: usize = 4096;

/// Room for the largest packet: IPv6 + UDP + BTH + DETH + ImmDt + payload
/// + pad + ICRC, rounded up.
const PACKET_ROOM: usize = MAX_PAYLOAD + 128;

/// Bytes of the GRH in front of UD receive data.
const GRH_LEN: usize = 40;

/// The QP1 Q_Key (GSI), which a UD QP can never be given.
const GSI_QKEY: u32 = 0x8001_0000;

fn crc(seed: u32, data: &[u8]) -> u32 {
    rdma::udp::crc32_le(seed, data)
}

/// A UD QP's transport.
#[pin_data]
pub(crate) struct UdQp {
    rd: Arc<RxeDev>,
    psn: AtomicU32,
    ip_id: AtomicU16,
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
                ip_id: AtomicU16::new(0),
                buf <- new_mutex!(buf, "UdQp::buf"),
            }),
            GFP_KERNEL,
        )
    }

    /// Sends one request: the sender's completion status.
    fn send(&self, qp: &QpCore, w: &SendWqe, out: &mut [u8]) -> WcStatus {
        let Some(dev) = self.rd.device() else {
            return WcStatus::FatalErr;
        };
        let Some(ah) = &w.ah else {
            return WcStatus::LocQpOpErr;
        };
        let av = ah.query();
        let Ok(sgid) = dev.query_gid(av.port_num, u32::from(av.grh.sgid_index)) else {
            return WcStatus::LocQpOpErr;
        };
        let (sgid, dgid) = (sgid.gid, av.grh.dgid);
        let hop_limit = if av.grh.hop_limit == 0 {
            64
        } else {
            av.grh.hop_limit
        };
        let ip = match (sgid.to_ipv4(), dgid.to_ipv4()) {
            (Some(src), Some(dst)) => IpHeader::V4(Ipv4 {
                tos: av.grh.traffic_class,
                id: self.ip_id.fetch_add(1, Ordering::Relaxed),
                dont_fragment: true,
                ttl: hop_limit,
                src,
                dst,
            }),
            (None, None) => IpHeader::V6(Ipv6 {
                traffic_class: av.grh.traffic_class,
                // rxe sends flow label 0.
                flow_label: 0,
                hop_limit,
                src: sgid.0,
                dst: dgid.0,
            }),
            // An IPv4 source with an IPv6 destination, or the reverse.
            _ => return WcStatus::LocQpOpErr,
        };

        let mtu = dev
            .query_port(1)
            .map(|p| p.active_mtu.bytes() as usize)
            .unwrap_or(256);
        let len = w.length as usize;
        if len > mtu || len > MAX_PAYLOAD {
            return WcStatus::LocLenErr;
        }
        // The payload is gathered into the second half of the buffer, then
        // the codec writes the whole packet into the first.
        let (front, payload) = out.split_at_mut(PACKET_ROOM);
        let payload = &mut payload[..len];
        if w.inline {
            payload.copy_from_slice(&w.inline_data[..len]);
        } else if mr::gather(&dev, qp.pd(), w.sges(), 0, payload).is_err() {
            return WcStatus::LocProtErr;
        }
        let imm = w.opcode == WrOpcode::SendWithImm;
        let opcode = if imm {
            Opcode::UdSendOnlyWithImmediate
        } else {
            Opcode::UdSendOnly
        };
        let psn = self.psn.fetch_add(1, Ordering::Relaxed) & 0xff_ffff;
        let headers = Headers {
            ip,
            udp: Udp {
                src_port: source_port(qp.qpn()),
                checksum: 0,
            },
            bth: Bth {
                opcode: opcode as u8,
                solicited: w.flags.contains(SendFlags::SOLICITED),
                pkey: 0xffff,
                dest_qpn: w.remote_qpn,
                psn,
                ..Bth::default()
            },
            ext: ExtHeaders {
                deth: Some(Deth {
                    qkey: w.remote_qkey,
                    resv8: 0,
                    src_qpn: qp.qpn(),
                }),
                immdt: imm.then_some(ImmDt { imm: w.imm }),
                ..ExtHeaders::default()
            },
        };
        let n = match packet::build(&headers, payload, &crc, front) {
            Ok(n) => n,
            Err(_) => return WcStatus::LocLenErr,
        };
        // To a device of ours in this namespace (the same one included):
        // straight to its receive path, without the network stack.
        let local = self.rd.rxe().device_for(self.rd.netdev.net_id(), &dgid);
        match local {
            Some(target) => {
                self.rd.counters.loopback.fetch_add(1, Ordering::Relaxed);
                receive_on(&target, &front[..n]);
            }
            None => {
                // A packet the network drops is lost, as UD allows; the
                // request still completes.
                let sent = match headers.ip {
                    IpHeader::V4(_) => rdma::udp::ip4_xmit(&self.rd.netdev, &front[..n]),
                    IpHeader::V6(_) => rdma::udp::ip6_xmit(&self.rd.netdev, &front[..n]),
                };
                if sent.is_ok() {
                    self.rd.counters.tx.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        WcStatus::Success
    }
}

impl QpOps for UdQp {
    fn run(&self, qp: &Arc<QpCore>) {
        let mut buf = self.buf.lock();
        let mut wqe = SendWqe::default();
        while qp.sq_next(&mut wqe) {
            let status = self.send(qp, &wqe, &mut buf[..]);
            qp.sq_complete(status, wqe.length);
        }
    }
}

/// The UDP source port of a QP's packets, spread over 0xc000..0xffff by
/// QPN as rxe does, so flows hash apart.
fn source_port(qpn: u32) -> u16 {
    0xc000 | (qpn.wrapping_mul(0x9e37_79b9) >> 18) as u16
}

/// Delivers one received frame (softirq context) to the device `find`
/// gives for its destination address. Returns whether a device took it;
/// the device counts what it delivered and dropped.
pub(crate) fn receive(frame: &[u8], find: impl Fn(&Gid) -> Option<Arc<RxeDev>>) -> bool {
    let Ok(pkt) = packet::parse(frame, MAX_PAYLOAD, &crc) else {
        return false;
    };
    let dst = match pkt.headers.ip {
        IpHeader::V4(ip) => Gid::from_ipv4(ip.dst),
        IpHeader::V6(ip) => Gid(ip.dst),
    };
    let Some(rd) = find(&dst) else {
        return false;
    };
    deliver(&rd, &pkt, frame);
    true
}

/// Delivers a frame built here to a device of ours (the loopback path).
fn receive_on(rd: &RxeDev, frame: &[u8]) {
    match packet::parse(frame, MAX_PAYLOAD, &crc) {
        Ok(pkt) => deliver(rd, &pkt, frame),
        Err(_) => {
            rd.counters.rx_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn deliver(rd: &RxeDev, pkt: &Packet<'_>, frame: &[u8]) {
    let ok = rd.device().is_some_and(|dev| {
        matches!(
            pkt.opcode,
            Opcode::UdSendOnly | Opcode::UdSendOnlyWithImmediate
        ) && dev
            .qp_by_num(pkt.dest_qpn())
            .is_some_and(|qp| deliver_ud(&dev, &qp, pkt, frame))
    });
    let c = if ok {
        &rd.counters.rx
    } else {
        &rd.counters.rx_dropped
    };
    c.fetch_add(1, Ordering::Relaxed);
}

fn deliver_ud(
    dev: &rdma::device::Device,
    qp: &Arc<QpCore>,
    pkt: &Packet<'_>,
    frame: &[u8],
) -> bool {
    if !matches!(qp.qp_type(), QpType::Ud | QpType::Gsi)
        || !matches!(qp.state(), QpState::Rtr | QpState::Rts | QpState::Sqd)
    {
        return false;
    }
    let Some(deth) = pkt.headers.ext.deth else {
        return false;
    };
    let want_qkey = if qp.qp_type() == QpType::Gsi {
        GSI_QKEY
    } else {
        qp.attr().qkey
    };
    if deth.qkey != want_qkey {
        return false;
    }
    let Some(rwqe) = qp.rq_take() else {
        // No receive posted: UD drops.
        return false;
    };
    let payload = pkt.payload;
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
    if (payload.len() + GRH_LEN) as u64 > u64::from(rwqe.length) {
        wc.status = WcStatus::LocLenErr;
        qp.complete_recv(rwqe, wc, false);
        return false;
    }
    // RoCE v2 over IPv4: 20 unused bytes, then the IPv4 header; over
    // IPv6 the GRH is the IPv6 header.
    let mut grh = [0u8; GRH_LEN];
    match pkt.headers.ip {
        IpHeader::V4(_) => grh[20..].copy_from_slice(&frame[..20]),
        IpHeader::V6(_) => grh.copy_from_slice(&frame[..GRH_LEN]),
    }
    let ok = mr::scatter(dev, qp.pd(), rwqe.sges(), 0, &grh).is_ok()
        && mr::scatter(dev, qp.pd(), rwqe.sges(), GRH_LEN as u64, payload).is_ok();
    if !ok {
        wc.status = WcStatus::LocProtErr;
    }
    qp.complete_recv(rwqe, wc, pkt.headers.bth.solicited);
    ok
}
