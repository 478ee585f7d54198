// SPDX-License-Identifier: GPL-2.0

//! The receive path: a frame from a namespace's UDP socket (softirq) or
//! from the loopback path is parsed as hostile input (bad ICRC,
//! truncation, unknown opcode: dropped and counted), matched to a device by
//! its destination address and to a QP by its BTH, and handed to the QP's
//! transport: `ud.rs` for UD, `rc.rs` for RC and UC.

use kernel::sync::Arc;

use rdma::provider::{Gid, ProviderDevice, ProviderQp};

use crate::counters::Counter;
use crate::device::RxeDev;
use crate::mcast::{MAX_QPS_PER_GROUP, MULTICAST_QPN};
use crate::net::fault::Verdict;
use crate::net::frame::{crc, dst_gid, MAX_PAYLOAD};
use crate::transport::rc::RcQp;
use crate::wire::fault::Dir;
use crate::wire::headers::{pkey_matches, DEFAULT_PKEY};
use crate::wire::opcode::Transport;
use crate::wire::packet::{self, Packet};

/// Delivers one received frame to the device `find` gives for its
/// destination address. Returns whether a device took it; the device
/// counts what it delivered and dropped (a malformed packet too, when its
/// IP header names one of our addresses).
pub(crate) fn receive(frame: &[u8], find: impl Fn(&Gid) -> Option<Arc<RxeDev>>) -> bool {
    match packet::parse(frame, MAX_PAYLOAD, &crc) {
        Ok(pkt) => {
            let Some(rd) = find(&dst_gid(&pkt.headers.ip)) else {
                return false;
            };
            deliver(&rd, &pkt, frame);
            true
        }
        Err(_) => {
            if let Some(rd) = packet::parse_ip(frame)
                .ok()
                .and_then(|ip| find(&dst_gid(&ip)))
            {
                rd.counters.drop_rx(Counter::RxDropMalformed);
            }
            false
        }
    }
}

/// Delivers a frame built here to a device of ours (the loopback path).
pub(crate) fn receive_on(rd: &RxeDev, frame: &[u8]) {
    match packet::parse(frame, MAX_PAYLOAD, &crc) {
        Ok(pkt) => deliver(rd, &pkt, frame),
        Err(_) => rd.counters.drop_rx(Counter::RxDropMalformed),
    }
}

fn deliver(rd: &RxeDev, pkt: &Packet<'_>, frame: &[u8]) {
    let verdict = rd.faults.rx(&rd.counters, pkt.psn(), frame);
    match &verdict {
        Verdict::Pass => deliver_now(rd, pkt, Some(frame)),
        Verdict::Drop => {}
        Verdict::Dup => {
            deliver_now(rd, pkt, Some(frame));
            deliver_now(rd, pkt, Some(frame));
        }
        Verdict::Hold(older) => {
            if let Some(f) = older {
                reparse_and_deliver(rd, f);
            }
        }
        Verdict::Changed(f) => reparse_and_deliver(rd, f),
    }
    if verdict.went() {
        if let Some(held) = rd.faults.release(Dir::Rx) {
            reparse_and_deliver(rd, &held);
        }
    }
}

/// Delivers a frame fault injection held back or changed.
fn reparse_and_deliver(rd: &RxeDev, frame: &[u8]) {
    match packet::parse(frame, MAX_PAYLOAD, &crc) {
        Ok(pkt) => deliver_now(rd, &pkt, Some(frame)),
        Err(_) => rd.counters.drop_rx(Counter::RxDropMalformed),
    }
}

/// Hands a packet to its QP (`frame`: the frame it came in, which UD and
/// multicast deliver from; None on the loopback path without frames,
/// which carries only RC and UC) and counts it received or dropped.
fn deliver_now(rd: &RxeDev, pkt: &Packet<'_>, frame: Option<&[u8]>) {
    match take(rd, pkt, frame) {
        Ok(()) => rd.counters.inc(Counter::RxPackets),
        Err(reason) => rd.counters.drop_rx(reason),
    }
}

/// Hands a multicast datagram to every QP of the device attached to its
/// destination group, a copy each; dropped if none took it.
fn take_multicast(
    rd: &RxeDev,
    dev: &ProviderDevice,
    pkt: &Packet<'_>,
    frame: &[u8],
) -> Result<(), Counter> {
    let mut qpns = [0u32; MAX_QPS_PER_GROUP];
    let n = rd.mcast.members(&dst_gid(&pkt.headers.ip), &mut qpns);
    if n == 0 {
        return Err(Counter::RxDropNoQp);
    }
    rd.counters.inc(Counter::RcvdPkts);
    let mut taken = 0;
    for qpn in &qpns[..n] {
        let Some(qp) = ProviderQp::by_qpn(dev, *qpn) else {
            continue;
        };
        if crate::transport::ud::deliver(&qp, pkt, frame).is_ok() {
            rd.counters.inc(Counter::RdmaRecvs);
            taken += 1;
        }
    }
    if taken > 0 {
        Ok(())
    } else {
        Err(Counter::RxDropQp)
    }
}

/// The device a packet is for, if its partition is ours.
fn accept(rd: &RxeDev, pkt: &Packet<'_>) -> Result<ProviderDevice, Counter> {
    let dev = rd.device().ok_or(Counter::RxDropNoQp)?;
    // One partition, the default one, as in the C rxe (whose P_Key table
    // has that one entry): a packet of another is not for this port.
    if !pkey_matches(pkt.headers.bth.pkey, DEFAULT_PKEY) {
        return Err(Counter::RxDropPkey);
    }
    Ok(dev)
}

/// Hands a packet to its QP; the reason it was dropped otherwise.
fn take(rd: &RxeDev, pkt: &Packet<'_>, frame: Option<&[u8]>) -> Result<(), Counter> {
    let dev = accept(rd, pkt)?;
    if pkt.dest_qpn() == MULTICAST_QPN {
        // Sent only in frames.
        return take_multicast(rd, &dev, pkt, frame.ok_or(Counter::RxDropQp)?);
    }
    let qp = ProviderQp::by_qpn(&dev, pkt.dest_qpn()).ok_or(Counter::RxDropNoQp)?;
    rd.counters.inc(Counter::RcvdPkts);
    match pkt.opcode.transport() {
        Transport::Ud => {
            crate::transport::ud::deliver(&qp, pkt, frame.ok_or(Counter::RxDropQp)?)?;
            rd.counters.inc(Counter::RdmaRecvs);
            Ok(())
        }
        Transport::Rc | Transport::Uc => {
            let mut taken = false;
            qp.provider::<RcQp>(|rc| taken = rc.receive(&qp, pkt));
            taken.then_some(()).ok_or(Counter::RxDropQp)
        }
        Transport::Rd => Err(Counter::RxDropQp),
    }
}

/// Delivers an RC or UC packet of a device of ours that came without a
/// frame (`xmit.rs`: the loopback path with no fault armed), as
/// `receive_on` delivers its frame.
pub(crate) fn receive_direct(rd: &RxeDev, pkt: &Packet<'_>) {
    deliver_now(rd, pkt, None);
}

/// The QP `qpn` of `rd` that a run of packets without frames goes to
/// (`transport/req.rs`), if `rd` would take packets for it (as [`take`]
/// checks for each packet; the partition is the sender's, the default).
pub(crate) fn direct_qp(rd: &RxeDev, qpn: u32) -> Option<ProviderQp> {
    let dev = rd.device()?;
    ProviderQp::by_qpn(&dev, qpn)
}
