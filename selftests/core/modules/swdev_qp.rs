// SPDX-License-Identifier: GPL-2.0

//! The transport of the selftest software device: QPs of one device talk to
//! each other by copying memory, with the checks and completion rules of RC,
//! UC and UD, and no network.
//!
//! It exists to prove the midlayer's contract (queues, completions, memory
//! checks, lifetimes), not to be a RoCE device: a SEND that finds no receive
//! WQE completes with an RNR error at once (no retries), and UD messages go
//! to the QP number the work request names on the same device.
//!
//! Work runs from the core's per-QP work ([`QpOps::run`]), except on a
//! device made with `inline` set, whose `post_send` executes the requests
//! in the caller's call chain: the misbehaviour the core must catch.

use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::kshim::sync::SpinLockIrq;
use rdma::spec::attr::Gid;
use rdma::spec::opcodes::{Access, SendFlags, WcFlags, WcOpcode, WcStatus, WrOpcode};
use rdma::spec::qp_state::{QpState, QpType};
use rdma::verbs::mr::{self, AccessError};
use rdma::verbs::qp::{ProviderQp, QpOps};
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{SendWqe, WqeOp};

/// Bytes copied at a time.
const CHUNK: usize = 4096;

/// The UD MTU of the device.
pub(crate) const UD_MTU: u32 = 4096;

/// Bytes of the GRH in front of UD data.
const GRH_LEN: usize = 40;

/// One QP's transport.
#[pin_data]
pub(crate) struct SwQp {
    inline: bool,
    #[pin]
    chunk: SpinLockIrq<KBox<[u8; CHUNK]>>,
}

impl SwQp {
    pub(crate) fn new(inline: bool) -> Result<Arc<SwQp>> {
        let chunk = KBox::new([0u8; CHUNK], GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(SwQp {
                inline,
                chunk <- rdma::new_spinlock_irq!(chunk, "SwQp::chunk"),
            }),
            GFP_KERNEL,
        )
    }

    fn process(&self, qp: &ProviderQp) {
        let mut chunk = self.chunk.lock();
        let mut wqe = SendWqe::default();
        while qp.sq_next(&mut wqe) {
            let (status, len) = execute(qp, &wqe, &mut chunk[..]);
            qp.sq_complete(status, len);
            if status != WcStatus::Success {
                break;
            }
        }
    }
}

impl QpOps for SwQp {
    fn post_send(&self, qp: &ProviderQp) {
        if self.inline {
            self.process(qp);
        } else {
            qp.schedule();
        }
    }

    fn run(&self, qp: &ProviderQp) {
        self.process(qp);
    }
}

fn local_status(e: AccessError) -> WcStatus {
    match e {
        AccessError::Bounds => WcStatus::LocLenErr,
        _ => WcStatus::LocProtErr,
    }
}

/// Moves `len` bytes from the sender's data to `put(offset, bytes)`.
fn copy_out_of_sender(
    qp: &ProviderQp,
    w: &SendWqe,
    chunk: &mut [u8],
    len: usize,
    mut put: impl FnMut(usize, &[u8]) -> core::result::Result<(), AccessError>,
) -> core::result::Result<(), (bool, AccessError)> {
    let mut off = 0;
    while off < len {
        let n = core::cmp::min(CHUNK, len - off);
        if w.inline {
            chunk[..n].copy_from_slice(&w.inline_data[off..off + n]);
        } else {
            qp.gather(w.sges(), off as u64, &mut chunk[..n])
                .map_err(|e| (true, e))?;
        }
        put(off, &chunk[..n]).map_err(|e| (false, e))?;
        off += n;
    }
    Ok(())
}

/// The 40 bytes a UD receive starts with: an IPv6 header, or for IPv4
/// GIDs 20 unused bytes and an IPv4 header (RoCE v2). Returns the
/// `network_hdr_type` of the completion.
fn build_grh(out: &mut [u8; GRH_LEN], sgid: &Gid, dgid: &Gid, len: u32) -> u8 {
    *out = [0; GRH_LEN];
    match (sgid.to_ipv4(), dgid.to_ipv4()) {
        (Some(s), Some(d)) => {
            let ip = &mut out[20..];
            ip[0] = 0x45;
            let total = (len + 28) as u16;
            ip[2..4].copy_from_slice(&total.to_be_bytes());
            ip[8] = 64;
            ip[9] = 17;
            ip[12..16].copy_from_slice(&s);
            ip[16..20].copy_from_slice(&d);
            let mut sum: u32 = 0;
            for i in (0..20).step_by(2) {
                sum += u32::from(u16::from_be_bytes([ip[i], ip[i + 1]]));
            }
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
            2
        }
        _ => {
            out[0] = 0x60;
            out[4..6].copy_from_slice(&((len + 8) as u16).to_be_bytes());
            out[6] = 17;
            out[7] = 64;
            out[8..24].copy_from_slice(&sgid.0);
            out[24..40].copy_from_slice(&dgid.0);
            3
        }
    }
}

/// Executes one send WQE: the completion status of the sender and its
/// byte count.
fn execute(qp: &ProviderQp, w: &SendWqe, chunk: &mut [u8]) -> (WcStatus, u32) {
    let dev = qp.device();
    let opcode = w.opcode();
    let (remote_addr, rkey) = w.op.remote().unwrap_or((0, 0));
    let imm = w.op.imm().unwrap_or(0);
    // The key a SEND or READ with invalidate names.
    let invalidate = match w.op {
        WqeOp::SendWithInv(k) | WqeOp::ReadWithInv { invalidate: k, .. } => k,
        _ => 0,
    };
    let (ud_qpn, ud_qkey) =
        w.ud.as_ref()
            .map_or((0, 0), |d| (d.remote_qpn, d.remote_qkey));
    if matches!(
        opcode,
        WrOpcode::LocalInv | WrOpcode::RegMr | WrOpcode::BindMw
    ) {
        return (qp.execute_local(&w.op), 0);
    }
    let ud = matches!(qp.qp_type(), QpType::Ud | QpType::Gsi);
    let reliable = qp.qp_type() == QpType::Rc;
    let len = w.length;
    // Unreliable transports lose what cannot be delivered, silently.
    let lost = if reliable {
        (WcStatus::RetryExcErr, 0)
    } else {
        (WcStatus::Success, len)
    };
    let dst_qpn = if ud { ud_qpn } else { qp.attr().dest_qp_num };
    let Some(dst) = qp.sibling(dst_qpn) else {
        return lost;
    };
    if !matches!(
        dst.state(),
        QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
    ) {
        return lost;
    }
    if ud {
        if !matches!(dst.qp_type(), QpType::Ud | QpType::Gsi) || dst.attr().qkey != ud_qkey {
            return lost;
        }
        if len > UD_MTU {
            return (WcStatus::LocLenErr, 0);
        }
    }
    if !w.inline {
        if let Err(e) = mr::check_sges(
            dev,
            qp.pd(),
            w.sges(),
            if opcode.gathers() {
                Access::NONE
            } else {
                Access::LOCAL_WRITE
            },
        ) {
            return (local_status(e), 0);
        }
    }
    let rights = dst.attr().qp_access_flags;
    let remote_fail = |dst: &ProviderQp, status: WcStatus| {
        if reliable {
            dst.set_error();
        }
        (status, 0)
    };
    // The RDMA part: WRITE, READ, atomics.
    match opcode {
        WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm => {
            if !rights.contains(Access::REMOTE_WRITE) {
                return remote_fail(&dst, WcStatus::RemAccessErr);
            }
            if dst
                .remote_check(rkey, remote_addr, u64::from(len), Access::REMOTE_WRITE)
                .is_err()
            {
                return remote_fail(&dst, WcStatus::RemAccessErr);
            }
            let r = copy_out_of_sender(qp, w, chunk, len as usize, |off, bytes| {
                let addr = remote_addr + off as u64;
                dst.remote_copy_in(rkey, addr, bytes, Access::REMOTE_WRITE)
            });
            match r {
                Ok(()) => {}
                Err((true, e)) => return (local_status(e), 0),
                Err((false, _)) => return remote_fail(&dst, WcStatus::RemAccessErr),
            }
            if opcode == WrOpcode::RdmaWrite {
                return (WcStatus::Success, len);
            }
        }
        WrOpcode::Flush => {
            let WqeOp::Flush {
                flush,
                whole_mr,
                length,
                ..
            } = w.op
            else {
                return (WcStatus::LocQpOpErr, 0);
            };
            let need = flush.access();
            let len = if whole_mr { 0 } else { length };
            if dst.remote_check(rkey, remote_addr, len, need).is_err() {
                return remote_fail(&dst, WcStatus::RemAccessErr);
            }
            // Memory is the persistence domain here: a full fence is the flush.
            core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
            return (WcStatus::Success, 0);
        }
        WrOpcode::AtomicWrite => {
            if !rights.contains(Access::REMOTE_WRITE) {
                return remote_fail(&dst, WcStatus::RemAccessErr);
            }
            let mut v = [0u8; 8];
            if w.inline {
                v.copy_from_slice(&w.inline_data[..8]);
            } else if let Err(e) = qp.gather(w.sges(), 0, &mut v) {
                return (local_status(e), 0);
            }
            return match dst.remote_atomic_write(rkey, remote_addr, u64::from_ne_bytes(v)) {
                Ok(()) => (WcStatus::Success, 8),
                Err(_) => remote_fail(&dst, WcStatus::RemAccessErr),
            };
        }
        WrOpcode::RdmaRead | WrOpcode::RdmaReadWithInv => {
            if !rights.contains(Access::REMOTE_READ) {
                return remote_fail(&dst, WcStatus::RemAccessErr);
            }
            if dst
                .remote_check(rkey, remote_addr, u64::from(len), Access::REMOTE_READ)
                .is_err()
            {
                return remote_fail(&dst, WcStatus::RemAccessErr);
            }
            let mut off = 0usize;
            while off < len as usize {
                let n = core::cmp::min(CHUNK, len as usize - off);
                let addr = remote_addr + off as u64;
                if dst
                    .remote_copy_out(rkey, addr, &mut chunk[..n], Access::REMOTE_READ)
                    .is_err()
                {
                    return remote_fail(&dst, WcStatus::RemAccessErr);
                }
                if let Err(e) = qp.scatter(w.sges(), off as u64, &chunk[..n]) {
                    return (local_status(e), 0);
                }
                off += n;
            }
            if opcode == WrOpcode::RdmaReadWithInv && qp.invalidate(invalidate).is_err() {
                return (WcStatus::LocProtErr, 0);
            }
            return (WcStatus::Success, len);
        }
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
            if !rights.contains(Access::REMOTE_ATOMIC) {
                return remote_fail(&dst, WcStatus::RemAccessErr);
            }
            let (cmp, a, b) = match w.op {
                WqeOp::CmpAndSwp { compare, swap, .. } => (true, compare, swap),
                WqeOp::FetchAndAdd { add, .. } => (false, add, 0),
                _ => return (WcStatus::LocQpOpErr, 0),
            };
            let old = dst.remote_atomic(rkey, remote_addr, |old| {
                if cmp {
                    if old == a {
                        b
                    } else {
                        old
                    }
                } else {
                    old.wrapping_add(a)
                }
            });
            let Ok(old) = old else {
                return remote_fail(&dst, WcStatus::RemAccessErr);
            };
            if let Err(e) = qp.scatter(w.sges(), 0, &old.to_ne_bytes()) {
                return (local_status(e), 0);
            }
            return (WcStatus::Success, 8);
        }
        _ => {}
    }
    // Everything left consumes a receive WQE.
    if opcode == WrOpcode::SendWithInv {
        if qp.invalidate(invalidate).is_err() {
            return remote_fail(&dst, WcStatus::RemInvReqErr);
        }
    }
    let Some(rwqe) = dst.rq_take() else {
        return if reliable {
            (WcStatus::RnrRetryExcErr, 0)
        } else {
            lost
        };
    };
    let mut wc = Wc {
        status: WcStatus::Success,
        opcode: WcOpcode::Recv,
        port_num: dst.attr().port_num,
        ..Wc::default()
    };
    let is_send = opcode != WrOpcode::RdmaWriteWithImm;
    let mut base = 0usize;
    if opcode.has_imm() {
        wc.wc_flags = wc.wc_flags | WcFlags::WITH_IMM;
        wc.imm_data = imm;
    }
    if opcode == WrOpcode::SendWithInv {
        wc.wc_flags = wc.wc_flags | WcFlags::WITH_INVALIDATE;
        wc.invalidate_rkey = invalidate;
    }
    if !is_send {
        wc.opcode = WcOpcode::RecvRdmaWithImm;
        wc.byte_len = len;
    } else {
        if ud {
            let Some(ah) = w.ud.as_ref().map(|d| &d.ah) else {
                return lost;
            };
            let av = ah.query();
            let sgid = dev
                .query_gid(av.port_num, u32::from(av.grh.sgid_index))
                .map(|e| e.gid)
                .unwrap_or_default();
            let mut grh = [0u8; GRH_LEN];
            wc.network_hdr_type = build_grh(&mut grh, &sgid, &av.grh.dgid, len);
            wc.wc_flags = wc.wc_flags | WcFlags::GRH;
            wc.src_qp = qp.qpn();
            wc.sl = av.sl;
            base = GRH_LEN;
            if rwqe.length as usize >= GRH_LEN {
                let _ = dst.scatter(rwqe.sges(), 0, &grh);
            }
        }
        wc.byte_len = len + base as u32;
        let fits = u64::from(len) + base as u64 <= u64::from(rwqe.length);
        let checked = mr::check_sges(dev, dst.pd(), rwqe.sges(), Access::LOCAL_WRITE);
        if !fits || checked.is_err() {
            wc.status = if fits {
                WcStatus::LocProtErr
            } else {
                WcStatus::LocLenErr
            };
            dst.complete_recv(rwqe, wc, false);
            return if reliable {
                (WcStatus::RemInvReqErr, 0)
            } else {
                (WcStatus::Success, len)
            };
        }
        let r = copy_out_of_sender(qp, w, chunk, len as usize, |off, bytes| {
            dst.scatter(rwqe.sges(), (base + off) as u64, bytes)
        });
        if let Err((local, e)) = r {
            wc.status = WcStatus::LocProtErr;
            dst.complete_recv(rwqe, wc, false);
            return if local {
                (local_status(e), 0)
            } else {
                (WcStatus::RemOpErr, 0)
            };
        }
    }
    let solicited = w.flags.contains(SendFlags::SOLICITED);
    dst.complete_recv(rwqe, wc, solicited);
    (WcStatus::Success, len)
}
