// SPDX-License-Identifier: GPL-2.0

//! Sending a packet: the room it takes, the UDP source port of a QP, and
//! the way out: a packet for an address of one of our devices in
//! the same namespace goes straight to that device's receive path (the
//! loopback path); anything else goes to the IP stack of the netdev's
//! namespace. Both transports (`ud.rs`, `rc.rs`) send through here.
//!
//! On the loopback path an RC or UC packet is not even made into a frame
//! when no fault is armed on either device: the receiver gets the packet
//! `parse` would have made of it (`packet::assemble`, proven equal on the
//! host by `rxe/wire/tests/assemble.rs`), its payload where the sender
//! gathered it, and no ICRC is computed or checked, as no wire could have
//! changed a byte. Counters, ordering and what the QPs see are those of the
//! frame; `loopback_direct` counts these packets. UD and multicast keep
//! the frame (a UD receive holds the IP header), and so does everything
//! while a fault is armed, for faults act on frames.
//!
//! A packet for the network stack with no fault armed on its sender is not
//! made into a frame here either: its headers, its payload where the
//! sender gathered it and its trailer (pad and ICRC) go to the stack in
//! parts, copied once into the skb (`send_split`).

use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::provider::udp::RouteCache;

use crate::counters::Counter;
use crate::device::RxeDev;
use crate::mcast::MULTICAST_QPN;
use crate::net::fault::Verdict;
use crate::net::frame::{crc, dst_gid, MAX_PAYLOAD};
use crate::wire::fault::Dir;
use crate::wire::opcode::{Opcode, Transport};
use crate::wire::packet::{self, AssembleError, Headers, IpHeader};

/// Room for the largest packet: IPv6 + UDP + BTH + the largest extension
/// headers + payload + pad + ICRC, rounded up.
pub(crate) const PACKET_ROOM: usize = MAX_PAYLOAD + 128;

/// Room for a packet without payload (ACKs), or for the headers of any
/// packet: what an RC or UC QP gives [`send`] to build in (a whole
/// frame, made only while a fault is armed, gets room of its own).
pub(crate) const SMALL_ROOM: usize = 128;

/// The UDP source port of a QP's packets, spread over 0xc000..0xffff by
/// QPN as rxe does, so flows hash apart.
pub(crate) fn source_port(qpn: u32) -> u16 {
    0xc000 | (qpn.wrapping_mul(0x9e37_79b9) >> 18) as u16
}

/// Why a packet did not leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendError {
    /// The codec refused it (a bug of the caller, or a payload too long).
    Build,
    /// The network stack refused it (no route, no memory).
    Network,
}

/// Builds `headers` and `payload` into `out` (or, for a whole frame that
/// does not fit there, into room allocated for it) and sends the packet,
/// through `route` if the sender has one destination. Any context; the caller must
/// hold no lock its own receive path takes (the loopback path delivers
/// before returning).
pub(crate) fn send(
    rd: &RxeDev,
    route: Option<&RouteCache>,
    headers: &Headers,
    payload: &[u8],
    out: &mut [u8],
) -> Result<(), SendError> {
    // The device of ours the packet is for, if any: looked up once.
    let local = rd
        .rxe()
        .device_for(rd.netdev.net_id(), &dst_gid(&headers.ip));
    if let Some(target) = &local {
        if goes_direct(rd, target, headers) {
            return send_direct(rd, target, headers, payload);
        }
    }
    let to = local.as_deref();
    if to.is_none() && !rd.faults.armed() {
        return send_split(rd, route, headers, payload, out);
    }
    // A whole frame, for a fault to act on (or a device of ours that takes
    // frames): the caller's room holds headers only unless it is UD's,
    // so the frame goes into room of its own (test paths: a fault armed).
    let len = packet::packet_len(headers, payload.len()).map_err(|_| SendError::Build)?;
    let mut room;
    let out = if out.len() >= len {
        out
    } else {
        room = KVec::from_elem(0u8, len, GFP_ATOMIC).map_err(|_| SendError::Network)?;
        &mut room[..]
    };
    let n = packet::build(headers, payload, &crc, out).map_err(|_| SendError::Build)?;
    let frame = &out[..n];
    let verdict = rd.faults.tx(&rd.counters, headers.bth.psn, frame);
    let sent = match &verdict {
        Verdict::Pass => emit(rd, route, &headers.ip, to, frame),
        // Lost on the way: the sender cannot tell.
        Verdict::Drop => Ok(()),
        Verdict::Dup => emit(rd, route, &headers.ip, to, frame)
            .and_then(|()| emit(rd, route, &headers.ip, to, frame)),
        Verdict::Hold(older) => older.as_ref().map_or(Ok(()), |f| emit_held(rd, f)),
        Verdict::Changed(f) => emit(rd, route, &headers.ip, to, f),
    };
    if verdict.went() {
        if let Some(held) = rd.faults.release(Dir::Tx) {
            let _ = emit_held(rd, &held);
        }
    }
    sent
}

/// Whether the packets from `rd` to QP `dest_qpn` on `target`, a device
/// of ours in the sender's namespace, go without frames: no fault armed on
/// either device (faults act on frames) and not multicast (a group's
/// packets go to every member, as frames). The one place these
/// conditions are written: [`goes_direct`] asks for each packet, and the
/// requester for a run of them, before it and between two of its packets
/// (`transport/req.rs`, `send_run`).
pub(crate) fn frameless(rd: &RxeDev, target: &RxeDev, dest_qpn: u32) -> bool {
    !rd.faults.armed() && !target.faults.armed() && dest_qpn != MULTICAST_QPN
}

/// Whether a packet with `headers` for `target` goes without a frame: an
/// RC or UC packet on the [`frameless`] path.
fn goes_direct(rd: &RxeDev, target: &RxeDev, headers: &Headers) -> bool {
    frameless(rd, target, headers.bth.dest_qpn)
        && Opcode::from_u8(headers.bth.opcode)
            .is_some_and(|op| matches!(op.transport(), Transport::Rc | Transport::Uc))
}

/// The device of ours an RC or UC QP's packets for `ip` and `dest_qpn`
/// go to without a frame, if any: where the requester may send a run of
/// packets at once (`transport/req.rs`).
pub(crate) fn direct_target(rd: &RxeDev, ip: &IpHeader, dest_qpn: u32) -> Option<Arc<RxeDev>> {
    let target = rd.rxe().device_for(rd.netdev.net_id(), &dst_gid(ip))?;
    frameless(rd, &target, dest_qpn).then_some(target)
}

/// Counts a packet sent to a device of ours without a frame.
pub(crate) fn count_direct(rd: &RxeDev) {
    rd.counters.inc(Counter::LoopbackPackets);
    rd.counters.inc(Counter::LoopbackDirect);
    rd.counters.inc(Counter::SentPkts);
}

/// Hands the packet of `headers` and `payload` to `target` without a frame
/// (the module doc), with the outcomes of the frame path: a packet `build`
/// refuses is the sender's error, one `parse` would refuse is counted as
/// malformed by the receiver.
fn send_direct(
    rd: &RxeDev,
    target: &RxeDev,
    headers: &Headers,
    payload: &[u8],
) -> Result<(), SendError> {
    let pkt = packet::assemble(headers, payload, MAX_PAYLOAD);
    if let Err(AssembleError::Build(_)) = pkt {
        return Err(SendError::Build);
    }
    count_direct(rd);
    match pkt {
        Ok(pkt) => crate::net::recv::receive_direct(target, &pkt),
        Err(_) => target.counters.drop_rx(Counter::RxDropMalformed),
    }
    Ok(())
}

/// Sends a packet fault injection held back.
fn emit_held(rd: &RxeDev, frame: &[u8]) -> Result<(), SendError> {
    let ip = packet::parse_ip(frame).map_err(|_| SendError::Build)?;
    let local = rd.rxe().device_for(rd.netdev.net_id(), &dst_gid(&ip));
    emit(rd, None, &ip, local.as_deref(), frame)
}

/// Sends one built packet with IP header `ip`: to `local`, the device of
/// ours its destination address is on (if any), by the loopback path, or
/// to the network stack.
fn emit(
    rd: &RxeDev,
    route: Option<&RouteCache>,
    ip: &IpHeader,
    local: Option<&RxeDev>,
    frame: &[u8],
) -> Result<(), SendError> {
    if let Some(target) = local {
        rd.counters.inc(Counter::LoopbackPackets);
        rd.counters.inc(Counter::SentPkts);
        crate::net::recv::receive_on(target, frame);
        return Ok(());
    }
    to_network(rd, route, ip, [frame, &[], &[]])
}

/// Sends a packet for the network stack whose frame nothing needs whole
/// (no fault is armed on the sender): its headers are built into `out`
/// and the network stack copies them, the payload from where the sender
/// gathered it, and the pad and ICRC, into the skb, a copy fewer than
/// building the frame first (`packet::build_split`, host-tested to make
/// the bytes `build` makes).
fn send_split(
    rd: &RxeDev,
    route: Option<&RouteCache>,
    headers: &Headers,
    payload: &[u8],
    out: &mut [u8],
) -> Result<(), SendError> {
    let (n, trailer) =
        packet::build_split(headers, payload, &crc, out).map_err(|_| SendError::Build)?;
    let head = out.get(..n).ok_or(SendError::Build)?;
    to_network(rd, route, &headers.ip, [head, payload, trailer.as_bytes()])
}

/// Hands a packet, in parts (IP header first), to the IP stack of the
/// netdev's namespace.
fn to_network(
    rd: &RxeDev,
    route: Option<&RouteCache>,
    ip: &IpHeader,
    parts: [&[u8]; 3],
) -> Result<(), SendError> {
    let v6 = matches!(ip, IpHeader::V6(_));
    match rdma::provider::udp::ip_xmit_parts(&rd.netdev, route, v6, parts) {
        Ok(()) => {
            rd.counters.inc(Counter::TxPackets);
            rd.counters.inc(Counter::SentPkts);
            Ok(())
        }
        Err(_) => {
            rd.counters.inc(Counter::SendErr);
            Err(SendError::Network)
        }
    }
}
