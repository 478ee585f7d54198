// SPDX-License-Identifier: GPL-2.0

//! Tag-matching ends for the TM test modules: a sender, an ordinary RC
//! [`End`], and a receiver whose RC QP takes its receives from a TM SRQ
//! ([`Rx`]), connected both ways ([`tm_pair`]).
//!
//! The receiver's buffer holds the tagged buffers from offset 0 and the
//! ordinary receives from [`PLAIN`]; the sender builds its messages from
//! offset 0 of its own buffer, keeps rendezvous data from [`RNDV_DATA`]
//! and receives FINs at [`FIN_AT`].

// Each test module uses its own part of this file.
#![allow(dead_code)]

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::device::{self, DeviceRef};
use rdma::kshim::mem::Buffer;
use rdma::spec::attr::Gid;
use rdma::spec::opcodes::{WcFlags, WcOpcode, WcStatus};
use rdma::spec::qp_state::QpState;
use rdma::spec::tm::header::{Rvh, Tmh, TmhOp, RVH_LEN, TMH_LEN};
use rdma::verbs::ah::{AhAttr, GlobalRoute};
use rdma::verbs::cq::Cq;
use rdma::verbs::mr::Mr;
use rdma::verbs::pd::Pd;
use rdma::verbs::qp::{Qp, QpInitAttr};
use rdma::verbs::srq::tm::{OpsKind, OpsWr, TmCap};
use rdma::verbs::srq::{Srq, SrqAttr};
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{RecvWr, SendOp, SendWr};

use crate::ktap::check;
use crate::rc::{modify_to, End, Opts, Port, Remote};
use crate::verify::poll;

/// Where the receiver's ordinary receives are.
pub(crate) const PLAIN: usize = 1 << 20;
/// Where the sender keeps rendezvous data.
pub(crate) const RNDV_DATA: usize = 1 << 20;
/// Where the sender receives FINs.
pub(crate) const FIN_AT: usize = 1 << 19;
/// Both buffers.
pub(crate) const BUF: usize = 2 << 20;

/// The receiver. Fields in destruction order: the QP before its SRQ, the
/// SRQ before its CQ.
pub(crate) struct Rx {
    pub(crate) qp: Qp,
    pub(crate) srq: Srq,
    pub(crate) mr: Mr,
    pub(crate) cq: Cq,
    pub(crate) pd: Pd,
    pub(crate) buf: Arc<Buffer>,
    pub(crate) dev: DeviceRef,
    pub(crate) gid: Gid,
}

/// A sender and a receiver, connected.
pub(crate) struct TmPair {
    pub(crate) rx: Rx,
    pub(crate) tx: End,
    /// Unexpected messages the receiver's software has seen.
    pub(crate) unexpected: u32,
}

/// The address of `dgid` from the device `dev` at `sgid`.
fn av(dev: &DeviceRef, sgid: &Gid, dgid: Gid) -> Result<AhAttr> {
    let (_, i) = dev.find_gid_on_port(1, sgid).ok_or(ENODEV)?;
    Ok(AhAttr {
        port_num: 1,
        grh: GlobalRoute {
            dgid,
            sgid_index: i as u8,
            hop_limit: 64,
            ..GlobalRoute::default()
        },
        ..AhAttr::default()
    })
}

impl Rx {
    /// A receiver on `port` with `o`'s options: its TM SRQ has `cap` and
    /// `srq_wr` ordinary receives; its QP is in RESET.
    pub(crate) fn new(port: Port<'_>, o: &Opts, cap: TmCap, srq_wr: u32) -> Result<Rx> {
        let dev = device::get_by_name(port.name).ok_or(ENODEV)?;
        let pd = Pd::alloc(dev.arc())?;
        let cq = Cq::create(dev.arc(), 4096, None)?;
        let attr = SrqAttr {
            max_wr: srq_wr,
            max_sge: 4,
            srq_limit: 0,
        };
        let srq = Srq::create_tm(pd.core(), &attr, &cap, cq.core())?;
        let qp = Qp::create(
            pd.core(),
            &QpInitAttr {
                qp_type: o.qp_type,
                send_cq: cq.core(),
                recv_cq: cq.core(),
                srq: Some(srq.core()),
                cap: o.cap,
                sq_sig_all: false,
                port_num: 1,
            },
        )?;
        let buf = Buffer::new(BUF)?;
        let mr = Mr::reg_buffer(pd.core(), &buf, 0, BUF, o.mr_access)?;
        Ok(Rx {
            qp,
            srq,
            mr,
            cq,
            pd,
            buf,
            dev,
            gid: port.gid,
        })
    }

    /// The address of `dgid` from this receiver.
    pub(crate) fn av(&self, dgid: Gid) -> Result<AhAttr> {
        av(&self.dev, &self.gid, dgid)
    }

    /// Moves the QP to RTS towards `peer`, with `o`'s options (its PSN
    /// this side's first).
    pub(crate) fn connect(&self, o: &Opts, peer: &Remote) -> Result {
        modify_to(&self.qp, o, peer, QpState::Rts)
    }

    /// A completion of the receiver's CQ.
    pub(crate) fn wc(&self) -> Result<Wc> {
        rdma::kshim::vec::pop(&mut poll(self.cq.core(), 1)?).ok_or(EINVAL)
    }

    /// Lists a tagged buffer of the receiver's: `(offset, length)` pieces
    /// of its buffer, one SGE each, for `tag` under `mask`, `wr_id` in its
    /// completions; signaled, its TM_ADD completion checked. Returns the
    /// handle.
    pub(crate) fn add(
        &self,
        wr_id: u64,
        tag: u64,
        mask: u64,
        pieces: &[(usize, usize)],
    ) -> Result<u32> {
        let mut sg = KVec::new();
        for &(off, len) in pieces {
            sg.push(self.buf.sge(off, len as u32, self.mr.lkey())?, GFP_KERNEL)?;
        }
        let mut op = [OpsWr {
            wr_id: wr_id | 1 << 63,
            kind: OpsKind::Add {
                buf: RecvWr {
                    wr_id,
                    cqe: None,
                    sg: &sg,
                },
                tag,
                mask,
            },
            signaled: true,
            unexpected_cnt: None,
            handle: 0,
        }];
        self.srq.core().post_ops(&mut op).map_err(|(_, e)| e)?;
        let wc = self.wc()?;
        self.expect(&wc, wr_id | 1 << 63, WcOpcode::TmAdd, WcStatus::Success)?;
        Ok(op[0].handle)
    }

    /// An exact tag's buffer of `len` bytes at `off`.
    pub(crate) fn add_exact(&self, tag: u64, off: usize, len: usize) -> Result<u32> {
        self.add(tag, tag, u64::MAX, &[(off, len)])
    }

    /// Posts an ordinary receive of the SRQ: `len` bytes at `PLAIN + off`.
    pub(crate) fn recv(&self, wr_id: u64, off: usize, len: usize) -> Result {
        let sg = [self.buf.sge(PLAIN + off, len as u32, self.mr.lkey())?];
        self.srq
            .core()
            .post_recv(&[RecvWr {
                wr_id,
                cqe: None,
                sg: &sg,
            }])
            .map_err(|(_, e)| e)
    }

    /// Checks a completion's identity, opcode and status.
    pub(crate) fn expect(&self, wc: &Wc, wr_id: u64, opcode: WcOpcode, status: WcStatus) -> Result {
        if wc.wr_id != wr_id || wc.opcode != opcode || wc.status != status {
            pr_err!(
                "completion: wr_id {:#x} opcode {:?} status {:?} flags {:#x} tag {:#x}, wanted {:#x} {:?} {:?}\n",
                wc.wr_id,
                wc.opcode,
                wc.status,
                wc.wc_flags.0,
                wc.tm_tag,
                wr_id,
                opcode,
                status
            );
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Checks a tagged message's completion: `wr_id`, TM_RECV, success,
    /// exactly `flags` (of the TM ones and SYNC_REQ), the TMH fields of
    /// `tag` (or none) and `byte_len`.
    pub(crate) fn expect_tm(
        &self,
        wc: &Wc,
        wr_id: u64,
        flags: WcFlags,
        tag: Option<u64>,
        byte_len: u32,
    ) -> Result {
        self.expect(wc, wr_id, WcOpcode::TmRecv, WcStatus::Success)?;
        let tm = WcFlags::TM_MATCH | WcFlags::TM_DATA_VALID | WcFlags::TM_SYNC_REQ;
        let want_tag = tag.unwrap_or(0);
        let want_ctx = tag.map_or(0, ctx_of);
        if wc.wc_flags.0 & tm.0 != flags.0
            || wc.tm_tag != want_tag
            || wc.tm_app_ctx != want_ctx
            || wc.byte_len != byte_len
        {
            pr_err!(
                "TM completion {:#x}: flags {:#x} tag {:#x} app_ctx {:#x} byte_len {}, wanted {:#x} {:#x} {:#x} {}\n",
                wr_id,
                wc.wc_flags.0 & tm.0,
                wc.tm_tag,
                wc.tm_app_ctx,
                wc.byte_len,
                flags.0,
                want_tag,
                want_ctx,
                byte_len
            );
            return Err(EINVAL);
        }
        Ok(())
    }
}

/// A sender on `tx` and a receiver on `rx` (the same device: loopback),
/// with `o`'s options; the TM SRQ has `cap` and `srq_wr` ordinary
/// receives.
pub(crate) fn tm_pair(
    tx: Port<'_>,
    rx: Port<'_>,
    o: &Opts,
    cap: TmCap,
    srq_wr: u32,
) -> Result<TmPair> {
    let o = Opts { buf_len: BUF, ..*o };
    let rxe = Rx::new(rx, &o, cap, srq_wr)?;
    let txe = End::new(tx, &o)?;
    let to_rx = Remote {
        qpn: rxe.qp.qpn(),
        psn: o.psn,
        av: txe.av(rxe.gid)?,
    };
    let to_tx = Remote {
        qpn: txe.qp.qpn(),
        psn: o.psn,
        av: rxe.av(txe.gid)?,
    };
    rxe.connect(&o, &to_tx)?;
    modify_to(&txe.qp, &o, &to_rx, QpState::Rts)?;
    Ok(TmPair {
        rx: rxe,
        tx: txe,
        unexpected: 0,
    })
}

/// The 16 bytes of a TMH.
pub(crate) fn tmh(op: TmhOp, app_ctx: u32, tag: u64) -> [u8; TMH_LEN] {
    let mut b = [0u8; TMH_LEN];
    let _ = Tmh {
        op: op as u8,
        app_ctx,
        tag,
    }
    .write(&mut b);
    b
}

/// The 16 bytes of an RVH.
pub(crate) fn rvh(va: u64, rkey: u32, len: u32) -> [u8; RVH_LEN] {
    let mut b = [0u8; RVH_LEN];
    let _ = Rvh { va, rkey, len }.write(&mut b);
    b
}

/// The app_ctx the tests send with tag `tag`.
pub(crate) fn ctx_of(tag: u64) -> u32 {
    (tag as u32) ^ 0x5a5a_0000
}

/// A pair is its receiver (its methods), plus a sender.
impl core::ops::Deref for TmPair {
    type Target = Rx;

    fn deref(&self) -> &Rx {
        &self.rx
    }
}

impl TmPair {
    /// A receiver's completion.
    pub(crate) fn rx_wc(&self) -> Result<Wc> {
        self.rx.wc()
    }

    /// Reports the unexpected messages seen (TAG_SYNC, signaled) and
    /// checks its completion: no sync wanted after it.
    pub(crate) fn sync(&self) -> Result {
        let mut op = [OpsWr {
            wr_id: 0xfeed,
            kind: OpsKind::Sync,
            signaled: true,
            unexpected_cnt: Some(self.unexpected),
            handle: 0,
        }];
        self.rx.srq.core().post_ops(&mut op).map_err(|(_, e)| e)?;
        let wc = self.rx_wc()?;
        self.expect(&wc, 0xfeed, WcOpcode::TmSync, WcStatus::Success)?;
        check(
            !wc.wc_flags.contains(WcFlags::TM_SYNC_REQ),
            "no sync wanted after a sync",
        )
    }

    /// Sends the sender's `len` bytes at `off` as one SEND, `wr_id` in
    /// its completion (not waited for).
    pub(crate) fn send_raw(&self, wr_id: u64, off: usize, len: usize) -> Result {
        let sg = [self.tx.sge(off, len)?];
        let sg: &[_] = if len == 0 { &[] } else { &sg };
        self.tx
            .qp
            .post_send(&[SendWr::new(wr_id, SendOp::Send, sg)])
            .map_err(|(_, e)| e)
    }

    /// Writes a message at `off` of the sender's buffer: the TMH of
    /// `op`, `tag` and its app_ctx, then `data`.
    pub(crate) fn write_msg(&self, off: usize, op: TmhOp, tag: u64, data: &[u8]) -> Result {
        self.tx.buf.write(off, &tmh(op, ctx_of(tag), tag))?;
        self.tx.buf.write(off + TMH_LEN, data)
    }

    /// A sender's completion.
    pub(crate) fn tx_wc(&self) -> Result<Wc> {
        rdma::kshim::vec::pop(&mut poll(self.tx.cq.core(), 1)?).ok_or(EINVAL)
    }

    /// The sender's SEND `wr_id` completed with `status`.
    pub(crate) fn sent(&self, wr_id: u64, status: WcStatus) -> Result {
        let wc = self.tx_wc()?;
        self.expect(&wc, wr_id, WcOpcode::Send, status)
    }
}
