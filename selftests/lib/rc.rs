// SPDX-License-Identifier: GPL-2.0

//! Connected endpoints for in-kernel selftest modules: the set-up every
//! test of traffic starts with, in one place.
//!
//! An [`End`] is a PD, a CQ (or a send and a receive CQ), one QP and one
//! buffer registered as an MR, on a device found by name, with the GID the
//! test uses on it. [`End::connect`] moves its QP through RESET, INIT, RTR
//! and RTS towards another end (its QPN, GID and PSN), giving each
//! transition the attributes the IBTA requires of it; [`pair`] makes two
//! ends and connects them both ways. What the tests vary (QP type, rights,
//! timers and retries, queue depths, buffer size, PD flags, PSNs) is an
//! [`Opts`]; a module starts from [`RC`] and changes what it needs.
//!
//! A module that shares a PD or a CQ between QPs, or that must not hold a
//! usage reference on its device, uses the parts below the endpoint:
//! [`create_qp`], [`qp_attr`] and [`modify_to`], with a [`Remote`] that
//! carries the peer and the address towards it (a GRH from the device's GID
//! table on a RoCE device, or a fixed one on the software test device).
//!
//! The rxe suites run between two devices of ours, `rxa` and `rxb`; an
//! [`RxePair`] names them with their addresses.
//!
//! Include it with `#[path = "../../lib/rc.rs"] mod rc;` at the crate root.

// Each test module uses its own part of this file.
#![allow(dead_code)]

use kernel::c_str;
use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use rdma::device::{self, DeviceRef};
use rdma::kshim::mem::{Buffer, Sge};
use rdma::spec::attr::{Gid, Mtu};
use rdma::spec::opcodes::Access;
use rdma::spec::qp_state::{required_attrs, AttrMask, QpState, QpType};
use rdma::verbs::ah::{Ah, AhAttr, GlobalRoute};
use rdma::verbs::cq::Cq;
use rdma::verbs::mr::Mr;
use rdma::verbs::pd::{Pd, PdFlags};
use rdma::verbs::qp::{Qp, QpAttr, QpCap, QpInitAttr};

/// Local write and every remote right: read, write and atomics.
pub(crate) const ALL_ACCESS: Access = Access(
    Access::LOCAL_WRITE.0
        | Access::REMOTE_WRITE.0
        | Access::REMOTE_READ.0
        | Access::REMOTE_ATOMIC.0,
);

/// Local write, remote read and write.
pub(crate) const RW_ACCESS: Access =
    Access(Access::LOCAL_WRITE.0 | Access::REMOTE_WRITE.0 | Access::REMOTE_READ.0);

/// How an endpoint is made and connected.
#[derive(Clone, Copy)]
pub(crate) struct Opts {
    /// RC, UC or UD.
    pub(crate) qp_type: QpType,
    /// Rights the QP grants its peer.
    pub(crate) access: Access,
    /// Rights of the buffer's MR.
    pub(crate) mr_access: Access,
    /// Flags of the PD (`PdFlags::UNSAFE_GLOBAL_RKEY` for a global key).
    pub(crate) pd_flags: PdFlags,
    /// Bytes of the registered buffer.
    pub(crate) buf_len: usize,
    /// Entries of the CQ (of the send CQ, with `recv_cqe`).
    pub(crate) cqe: u32,
    /// Entries of a receive CQ of its own; `None`: one CQ for both queues.
    pub(crate) recv_cqe: Option<u32>,
    /// Queue sizes of the QP.
    pub(crate) cap: QpCap,
    /// Whether every send request is signaled.
    pub(crate) sq_sig_all: bool,
    /// Path MTU.
    pub(crate) path_mtu: Mtu,
    /// The first PSN this end sends (its peer expects it).
    pub(crate) psn: u32,
    /// Outstanding RDMA READs and atomics, as requester and as responder.
    pub(crate) max_rd_atomic: u8,
    /// RNR NAK timer code.
    pub(crate) min_rnr_timer: u8,
    /// Local ACK timeout code.
    pub(crate) timeout: u8,
    /// Transport retries.
    pub(crate) retry_cnt: u8,
    /// RNR retries (7: infinite).
    pub(crate) rnr_retry: u8,
    /// Q_Key (UD).
    pub(crate) qkey: u32,
}

/// An RC endpoint with every right granted, 64 requests deep, 4 SGEs and
/// 128 bytes of inline data, selective signaling, timers for a slow (TCG)
/// guest, and a 64 KiB buffer.
pub(crate) const RC: Opts = Opts {
    qp_type: QpType::Rc,
    access: ALL_ACCESS,
    mr_access: ALL_ACCESS,
    pd_flags: PdFlags::NONE,
    buf_len: 64 * 1024,
    cqe: 1024,
    recv_cqe: None,
    cap: QpCap {
        max_send_wr: 64,
        max_recv_wr: 64,
        max_send_sge: 4,
        max_recv_sge: 4,
        max_inline_data: 128,
    },
    sq_sig_all: false,
    path_mtu: Mtu::Mtu1024,
    psn: 0,
    max_rd_atomic: 16,
    // 0.01 ms.
    min_rnr_timer: 1,
    // About a quarter of a second.
    timeout: 16,
    retry_cnt: 7,
    rnr_retry: 7,
    qkey: 0,
};

/// A device and the address a test uses on it.
#[derive(Clone, Copy)]
pub(crate) struct Port<'a> {
    /// The device's name.
    pub(crate) name: &'a CStr,
    /// The GID of the address, on port 1.
    pub(crate) gid: Gid,
}

/// The two devices of an rxe suite, `rxa` and `rxb`, with one address
/// each: the set-up of `rxe_pair` in `selftests/lib/rxe_pair.sh`, which
/// binds them in two namespaces to the ends of a veth pair and gives them
/// addresses NET.1 and NET.2 (and NET6::1 and NET6::2).
#[derive(Clone, Copy)]
pub(crate) struct RxePair {
    /// `rxa`, the first address of the subnet.
    pub(crate) a: Port<'static>,
    /// `rxb`, the second.
    pub(crate) b: Port<'static>,
}

impl RxePair {
    /// `rxa` at `a` and `rxb` at `b`.
    pub(crate) fn new(a: Gid, b: Gid) -> Self {
        RxePair {
            a: Port {
                name: c_str!("rxa"),
                gid: a,
            },
            b: Port {
                name: c_str!("rxb"),
                gid: b,
            },
        }
    }

    /// `rxa` at 10.78.`net`.1 and `rxb` at 10.78.`net`.2 (each suite has a
    /// subnet of its own).
    pub(crate) fn ipv4(net: u8) -> Self {
        Self::new(
            Gid::from_ipv4([10, 78, net, 1]),
            Gid::from_ipv4([10, 78, net, 2]),
        )
    }

    /// `rxa` at fd00:`net`::1 and `rxb` at fd00:`net`::2 (`net` in hex, as
    /// the script writes it: 0x79 is fd00:79::).
    pub(crate) fn ipv6(net: u8) -> Self {
        let at = |last: u8| {
            let mut g = [0u8; 16];
            g[0] = 0xfd;
            g[3] = net;
            g[15] = last;
            Gid(g)
        };
        Self::new(at(1), at(2))
    }
}

/// What a QP is connected to.
#[derive(Clone, Copy, Default)]
pub(crate) struct Remote {
    /// The peer's QP number.
    pub(crate) qpn: u32,
    /// The first PSN the peer sends.
    pub(crate) psn: u32,
    /// The address of the peer's port, seen from this QP.
    pub(crate) av: AhAttr,
}

/// Creates a QP of `o`'s type and queue sizes on `pd`, completing on
/// `send_cq` and `recv_cq`.
pub(crate) fn create_qp(pd: &Pd, send_cq: &Cq, recv_cq: &Cq, o: &Opts) -> Result<Qp> {
    Qp::create(
        pd.core(),
        &QpInitAttr {
            qp_type: o.qp_type,
            send_cq: send_cq.core(),
            recv_cq: recv_cq.core(),
            srq: None,
            cap: o.cap,
            sq_sig_all: o.sq_sig_all,
            port_num: 1,
        },
    )
}

/// Every attribute `modify_qp` takes, with the values of `o` and `peer`,
/// for a move to `state`.
pub(crate) fn qp_attr(o: &Opts, state: QpState, peer: &Remote) -> QpAttr {
    QpAttr {
        qp_state: state,
        qp_access_flags: o.access,
        port_num: 1,
        pkey_index: 0,
        qkey: o.qkey,
        path_mtu: o.path_mtu,
        dest_qp_num: peer.qpn,
        rq_psn: peer.psn,
        sq_psn: o.psn,
        max_rd_atomic: o.max_rd_atomic,
        max_dest_rd_atomic: o.max_rd_atomic,
        min_rnr_timer: o.min_rnr_timer,
        timeout: o.timeout,
        retry_cnt: o.retry_cnt,
        rnr_retry: o.rnr_retry,
        ah_attr: peer.av,
        ..QpAttr::default()
    }
}

/// Moves `qp` from its state through INIT, RTR and RTS, up to `upto`,
/// each step with the attributes it requires (of `o`, towards `peer`).
/// States the QP has reached already are skipped.
pub(crate) fn modify_to(qp: &Qp, o: &Opts, peer: &Remote, upto: QpState) -> Result {
    let mut cur = qp.query()?.qp_state;
    for next in [QpState::Init, QpState::Rtr, QpState::Rts] {
        if next as u32 <= cur as u32 {
            continue;
        }
        let mask = required_attrs(cur, next, qp.qp_type()).ok_or(EINVAL)? | AttrMask::STATE;
        qp.modify(&qp_attr(o, next, peer), mask)?;
        cur = next;
        if next == upto {
            break;
        }
    }
    Ok(())
}

/// One endpoint. Fields in destruction order.
pub(crate) struct End {
    /// The QP.
    pub(crate) qp: Qp,
    /// The MR over `buf`.
    pub(crate) mr: Mr,
    /// The CQ: of both queues, or of the send queue with `rcq`.
    pub(crate) cq: Cq,
    /// The receive queue's own CQ, if `Opts::recv_cqe` asked for one.
    pub(crate) rcq: Option<Cq>,
    /// The PD.
    pub(crate) pd: Pd,
    /// The registered buffer.
    pub(crate) buf: Arc<Buffer>,
    /// The device (a usage reference).
    pub(crate) dev: DeviceRef,
    /// The address this end uses.
    pub(crate) gid: Gid,
    /// How it was made; how it connects.
    pub(crate) opts: Opts,
}

impl End {
    /// An endpoint on `port`: PD, CQ(s), QP and registered buffer, as `o`
    /// says. Its QP is in RESET.
    pub(crate) fn new(port: Port<'_>, o: &Opts) -> Result<End> {
        let dev = device::get_by_name(port.name).ok_or(ENODEV)?;
        let pd = Pd::alloc_with(dev.arc(), o.pd_flags)?;
        let cq = Cq::create(dev.arc(), o.cqe, None)?;
        let rcq = match o.recv_cqe {
            Some(n) => Some(Cq::create(dev.arc(), n, None)?),
            None => None,
        };
        let qp = create_qp(&pd, &cq, rcq.as_ref().unwrap_or(&cq), o)?;
        let buf = Buffer::new(o.buf_len)?;
        let mr = Mr::reg_buffer(pd.core(), &buf, 0, o.buf_len, o.mr_access)?;
        Ok(End {
            qp,
            mr,
            cq,
            rcq,
            pd,
            buf,
            dev,
            gid: port.gid,
            opts: *o,
        })
    }

    /// The CQ of the receive queue.
    pub(crate) fn recv_cq(&self) -> &Cq {
        self.rcq.as_ref().unwrap_or(&self.cq)
    }

    /// The index of this end's GID on port 1.
    pub(crate) fn gid_index(&self) -> Result<u8> {
        let (_, i) = self.dev.find_gid_on_port(1, &self.gid).ok_or(ENODEV)?;
        Ok(i as u8)
    }

    /// The address of `dgid` from this end: port 1, a GRH from this end's
    /// GID.
    pub(crate) fn av(&self, dgid: Gid) -> Result<AhAttr> {
        Ok(AhAttr {
            port_num: 1,
            grh: GlobalRoute {
                dgid,
                sgid_index: self.gid_index()?,
                hop_limit: 64,
                ..GlobalRoute::default()
            },
            ..AhAttr::default()
        })
    }

    /// An address handle to `dgid`, on this end's PD.
    pub(crate) fn ah(&self, dgid: Gid) -> Result<Ah> {
        Ah::create(self.pd.core(), &self.av(dgid)?)
    }

    /// Moves the QP up to `upto` (INIT, RTR or RTS) towards `peer`: its
    /// QPN, its first PSN, and the address of its GID.
    pub(crate) fn connect(&self, peer: &End, upto: QpState) -> Result {
        let remote = Remote {
            qpn: peer.qp.qpn(),
            psn: peer.opts.psn,
            av: self.av(peer.gid)?,
        };
        modify_to(&self.qp, &self.opts, &remote, upto)
    }

    /// Moves a UD QP to RTS: it has no peer (each send names one).
    pub(crate) fn ready(&self) -> Result {
        modify_to(&self.qp, &self.opts, &Remote::default(), QpState::Rts)
    }

    /// An SGE of `len` bytes at `off` in the buffer.
    pub(crate) fn sge(&self, off: usize, len: usize) -> Result<Sge> {
        self.buf.sge(off, len as u32, self.mr.lkey())
    }

    /// The QP's state.
    pub(crate) fn state(&self) -> Result<QpState> {
        Ok(self.qp.query()?.qp_state)
    }
}

/// Two ends on `a` and `b`, connected both ways (RTS).
pub(crate) fn pair(a: Port<'_>, b: Port<'_>, o: &Opts) -> Result<(End, End)> {
    let x = End::new(a, o)?;
    let y = End::new(b, o)?;
    x.connect(&y, QpState::Rts)?;
    y.connect(&x, QpState::Rts)?;
    Ok((x, y))
}
