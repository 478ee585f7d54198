// SPDX-License-Identifier: GPL-2.0

//! The receive path: a frame from a namespace's UDP socket (softirq) or
//! from the loopback path is parsed as hostile input (bad ICRC,
//! truncation, unknown opcode: dropped and counted), matched to a device by
//! its destination address and to a QP by its BTH, and handed to the QP's
//! transport: `ud.rs` for UD, `rc.rs` for RC and UC.

use core::sync::atomic::Ordering;

use kernel::sync::Arc;

use rdma::spec::attr::Gid;

use crate::device::RxeDev;
use crate::net::xmit::{crc, dst_gid, MAX_PAYLOAD};
use crate::transport::rc::RcQp;
use crate::wire::opcode::Transport;
use crate::wire::packet::{self, Packet};

/// Delivers one received frame to the device `find` gives for its
/// destination address. Returns whether a device took it; the device
/// counts what it delivered and dropped.
pub(crate) fn receive(frame: &[u8], find: impl Fn(&Gid) -> Option<Arc<RxeDev>>) -> bool {
    let Ok(pkt) = packet::parse(frame, MAX_PAYLOAD, &crc) else {
        return false;
    };
    let Some(rd) = find(&dst_gid(&pkt.headers.ip)) else {
        return false;
    };
    deliver(&rd, &pkt, frame);
    true
}

/// Delivers a frame built here to a device of ours (the loopback path).
pub(crate) fn receive_on(rd: &RxeDev, frame: &[u8]) {
    match packet::parse(frame, MAX_PAYLOAD, &crc) {
        Ok(pkt) => deliver(rd, &pkt, frame),
        Err(_) => {
            rd.counters.rx_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn deliver(rd: &RxeDev, pkt: &Packet<'_>, frame: &[u8]) {
    let ok = rd.device().is_some_and(|dev| {
        let Some(qp) = dev.qp(pkt.dest_qpn()) else {
            return false;
        };
        match pkt.opcode.transport() {
            Transport::Ud => crate::transport::ud::deliver(&qp, pkt, frame),
            Transport::Rc | Transport::Uc => {
                let mut taken = false;
                qp.provider::<RcQp>(|rc| taken = rc.receive(&qp, pkt));
                taken
            }
            Transport::Rd => false,
        }
    });
    let c = if ok {
        &rd.counters.rx
    } else {
        &rd.counters.rx_dropped
    };
    c.fetch_add(1, Ordering::Relaxed);
}
