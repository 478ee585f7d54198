// SPDX-License-Identifier: GPL-2.0

//! Work completions (`struct ib_wc`) and per-request completion callbacks
//! (`struct ib_cqe`).
//!
//! A work request may carry a [`CqeDone`] (`wr_cqe` in C): when its
//! completion is polled by the core's completion machinery (a CQ made with
//! [`Cq::alloc`](crate::verbs::cq::Cq::alloc)), the core calls its `done`. The
//! reference travels in the work request and its completion (an `Arc`
//! clone, no allocation), so the callback object lives at least as long.

use kernel::sync::Arc;

use crate::spec::opcodes::{WcFlags, WcOpcode, WcStatus};
use crate::verbs::cq::CqCore;

/// What the core calls for each completion of a work request that named it.
pub trait CqeDone: Send + Sync {
    /// Handles one completion, in the CQ's poll context; must not sleep
    /// unless that context is a workqueue.
    fn done(&self, cq: &CqCore, wc: &Wc);

    /// The request's completion was added to a
    /// [`PollCtx::Direct`](crate::verbs::cq::PollCtx::Direct) CQ, which
    /// notifies nobody: [`CqeDone::done`] follows when the CQ's owner polls
    /// it. Called from the provider's push with the CQ's ring lock held, in
    /// any context: must not sleep nor use the CQ. The default does
    /// nothing; `Qp::drain` waits on it.
    fn queued(&self, _cq: &CqCore) {}
}

/// A work completion.
#[derive(Clone, Default)]
pub struct Wc {
    /// The work request's identifier.
    pub wr_id: u64,
    /// The work request's completion callback, if it named one.
    pub cqe: Option<Arc<dyn CqeDone>>,
    /// Outcome.
    pub status: WcStatus,
    /// What completed.
    pub opcode: WcOpcode,
    /// Provider-specific detail of an error.
    pub vendor_err: u32,
    /// Bytes received (receives, RDMA READ) or sent.
    pub byte_len: u32,
    /// The local QP.
    pub qp_num: u32,
    /// The sending QP (UD receives).
    pub src_qp: u32,
    /// Which optional fields are valid.
    pub wc_flags: WcFlags,
    /// Immediate data, as the number the sender posted.
    pub imm_data: u32,
    /// The key a SEND with invalidate invalidated.
    pub invalidate_rkey: u32,
    /// P_Key index (GSI).
    pub pkey_index: u16,
    /// Service level.
    pub sl: u8,
    /// Port the receive arrived on.
    pub port_num: u32,
    /// Source MAC (RoCE UD receives).
    pub smac: [u8; 6],
    /// `RDMA_NETWORK_*` of the received packet: 2 for IPv4, 3 for IPv6.
    pub network_hdr_type: u8,
    /// A TM SRQ's message: the tag of its TMH (`ibv_wc_tm_info.tag`).
    pub tm_tag: u64,
    /// A TM SRQ's message: the `app_ctx` of its TMH
    /// (`ibv_wc_tm_info.priv`).
    pub tm_app_ctx: u32,
}

impl Wc {
    /// A completion with only identity and status: what a flushed work
    /// request completes with.
    pub fn flushed(wr_id: u64, cqe: Option<Arc<dyn CqeDone>>, opcode: WcOpcode, qp_num: u32) -> Wc {
        Wc {
            wr_id,
            cqe,
            status: WcStatus::WrFlushErr,
            opcode,
            qp_num,
            ..Wc::default()
        }
    }
}
