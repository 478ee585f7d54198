// SPDX-License-Identifier: GPL-2.0

//! The tag-matching part of a TM SRQ (the `ibv_post_srq_ops(3)` model,
//! Documentation/tag_matching.rst): the list of tagged buffers
//! (`spec::tm::list`, its storage allocated here), the buffers themselves
//! at their handles' indexes, and the list operations with their
//! completions on the SRQ's own CQ.
//!
//! Operations are carried out as they are posted, so none is ever
//! outstanding after `post_ops` returns; `max_ops` bounds one chain.
//! Their completions go to the SRQ's CQ under the SRQ's lock (lock order:
//! `SrqCore::state`, then the CQ's ring), as completions made by the core
//! (a handler the CQ calls is deferred, never run under the lock).

use kernel::error::code::{EINVAL, ENOMEM};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::spec::opcodes::{WcFlags, WcOpcode, WcStatus};
use crate::spec::tm::list::{Arrival, Handle, Slot, SlotInfo, TagList, TmListError};
use crate::verbs::cq::CqCore;
use crate::verbs::srq::SrqCore;
use crate::verbs::wc::Wc;
use crate::verbs::wr::{RecvWqe, RecvWr};

/// The device's tag-matching limits (`struct ibv_tm_caps`); all zero: no
/// tag matching.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TmCaps {
    /// Largest rendezvous request (TMH, RVH and user data), in bytes.
    pub max_rndv_hdr_size: u32,
    /// Largest list of tagged buffers of one SRQ.
    pub max_num_tags: u32,
    /// [`TM_CAP_RC`] if RC QPs can use a TM SRQ.
    pub flags: u32,
    /// Most list operations in one chain.
    pub max_ops: u32,
    /// Most SGEs of a tagged buffer.
    pub max_sge: u32,
}

/// Tag matching on RC QPs (`IBV_TM_CAP_RC`).
pub const TM_CAP_RC: u32 = 1;

/// What a TM SRQ is created with (`struct ibv_tm_cap`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TmCap {
    /// The list's size.
    pub max_num_tags: u32,
    /// Most operations in one chain.
    pub max_ops: u32,
}

/// What a list operation does.
pub enum OpsKind<'a> {
    /// `IBV_WR_TAG_ADD`: lists `buf` (its `wr_id` is the receive's, what
    /// the message's completions carry) for messages whose tag `t` has
    /// `t & mask == tag`.
    Add {
        /// The tagged buffer.
        buf: RecvWr<'a>,
        /// The tag.
        tag: u64,
        /// The mask.
        mask: u64,
    },
    /// `IBV_WR_TAG_DEL`: takes the entry of handle [`OpsWr::handle`] off
    /// the list.
    Del,
    /// `IBV_WR_TAG_SYNC`: only the unexpected count.
    Sync,
}

/// A list operation (`struct ibv_ops_wr`).
pub struct OpsWr<'a> {
    /// The operation's identifier, in its completion.
    pub wr_id: u64,
    /// What it does.
    pub kind: OpsKind<'a>,
    /// `IBV_OPS_SIGNALED`: a completion on the SRQ's CQ (a `Del` that
    /// lost to a message completes with `TmErr` anyway).
    pub signaled: bool,
    /// `IBV_OPS_TM_SYNC`: the number of unexpected messages software has
    /// handled.
    pub unexpected_cnt: Option<u32>,
    /// The entry: returned by `Add`, given to `Del`.
    pub handle: u32,
}

/// A tagged buffer a message matched: the provider places the message's
/// data in it and completes it ([`ProviderQp::tm_complete`],
/// [`ProviderQp::tm_finish`]), or hands it to a rendezvous
/// ([`ProviderQp::tm_rndv`]). Its entry's slot in the list stays taken
/// while this lives: dropping it (a QP reset) releases the slot.
///
/// [`ProviderQp::tm_complete`]: crate::verbs::qp::ProviderQp::tm_complete
/// [`ProviderQp::tm_finish`]: crate::verbs::qp::ProviderQp::tm_finish
/// [`ProviderQp::tm_rndv`]: crate::verbs::qp::ProviderQp::tm_rndv
pub struct TaggedRecv {
    /// The buffer, with the `wr_id` of its `TAG_ADD`.
    pub wqe: RecvWqe,
    handle: u32,
    /// The SRQ whose slot this holds; `None` once handed on.
    srq: Option<Arc<SrqCore>>,
}

impl TaggedRecv {
    pub(crate) fn new(wqe: RecvWqe, handle: u32, srq: Arc<SrqCore>) -> Self {
        TaggedRecv {
            wqe,
            handle,
            srq: Some(srq),
        }
    }

    /// The entry's handle, handed on to a rendezvous READ that releases it
    /// when it completes: dropping `self` no longer does.
    pub(crate) fn hand_on(mut self) -> u32 {
        self.srq = None;
        self.handle
    }
}

impl Drop for TaggedRecv {
    fn drop(&mut self) {
        if let Some(srq) = self.srq.take() {
            srq.tm_release(self.handle);
        }
    }
}

/// What [`TmList::deliver`] found, before the SRQ wraps it.
pub(crate) enum Found {
    Tagged(RecvWqe, u32),
    Plain(RecvWqe),
    Empty,
}

/// Where a message that arrived at a TM SRQ goes.
pub enum Delivery {
    /// The tagged buffer it matched.
    Tagged(TaggedRecv),
    /// An ordinary receive: the message is unexpected (counted), untagged,
    /// or not a tagged message at all.
    Plain(RecvWqe),
    /// Nothing matched and no ordinary receive is posted: nothing changed
    /// (the QP answers RNR).
    Empty,
}

/// A TM SRQ's list and its buffers.
pub(crate) struct TmList {
    list: TagList<KVVec<Slot>, KVVec<SlotInfo>, KVVec<u32>>,
    /// The tagged buffers, at their handles' indexes.
    bufs: KVVec<RecvWqe>,
    max_ops: u32,
}

impl TmList {
    /// A list for `cap`. May sleep.
    pub(crate) fn new(cap: &TmCap, seed: u64) -> Result<Self> {
        let n = cap.max_num_tags as usize;
        let slots = KVVec::from_elem(Slot::default(), n, GFP_KERNEL)?;
        let infos = KVVec::from_elem(SlotInfo::default(), n, GFP_KERNEL)?;
        let buckets = KVVec::from_elem(0u32, n.next_power_of_two(), GFP_KERNEL)?;
        let mut bufs = KVVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            bufs.push(RecvWqe::default(), GFP_KERNEL)?;
        }
        let list = TagList::new(slots, infos, buckets, seed).map_err(|_| EINVAL)?;
        Ok(TmList {
            list,
            bufs,
            max_ops: cap.max_ops,
        })
    }

    /// Where a message goes (`tag`: a tagged message's, matched against
    /// the list; `None`: an ordinary receive); `plain` takes an ordinary
    /// receive off the SRQ's queue.
    pub(crate) fn deliver(
        &mut self,
        tag: Option<u64>,
        plain: impl FnOnce() -> Option<RecvWqe>,
    ) -> Found {
        let Some(tag) = tag else {
            return plain().map_or(Found::Empty, Found::Plain);
        };
        let mut got = None;
        match self.list.arrive_or(tag, || {
            got = plain();
            got.is_some()
        }) {
            Some(Arrival::Matched(h)) => {
                Found::Tagged(core::mem::take(&mut self.bufs[h.index()]), h.0)
            }
            Some(Arrival::Unexpected) => got.map_or(Found::Empty, Found::Plain),
            None => Found::Empty,
        }
    }

    /// The message that took `handle`'s entry is done with it.
    pub(crate) fn release(&mut self, handle: u32) {
        // A handle the provider got from `deliver`: always consumed.
        let _ = self.list.release(Handle(handle));
    }

    /// Carries out `ops` in order; on an error, the index of the first
    /// one not carried out (those before it were).
    pub(crate) fn post(
        &mut self,
        ops: &mut [OpsWr<'_>],
        max_sge: u32,
        cq: &Arc<CqCore>,
    ) -> core::result::Result<(), (usize, Error)> {
        for (i, op) in ops.iter_mut().enumerate() {
            if i >= self.max_ops as usize {
                return Err((i, ENOMEM));
            }
            if let Some(n) = op.unexpected_cnt {
                self.list.sync(n);
            }
            let (opcode, status) = match &op.kind {
                OpsKind::Add { buf, tag, mask } => {
                    let mut wqe = RecvWqe::default();
                    wqe.fill(buf, max_sge).map_err(|e| (i, e))?;
                    let h = self.list.add(*tag, *mask).map_err(|_| (i, ENOMEM))?;
                    self.bufs[h.index()] = wqe;
                    op.handle = h.0;
                    (WcOpcode::TmAdd, WcStatus::Success)
                }
                OpsKind::Del => match self.list.delete(Handle(op.handle)) {
                    Ok(()) => {
                        self.bufs[Handle(op.handle).index()] = RecvWqe::default();
                        (WcOpcode::TmDel, WcStatus::Success)
                    }
                    Err(TmListError::Consumed) => (WcOpcode::TmDel, WcStatus::TmErr),
                    Err(_) => return Err((i, EINVAL)),
                },
                OpsKind::Sync => (WcOpcode::TmSync, WcStatus::Success),
            };
            if op.signaled || status != WcStatus::Success {
                let wc = Wc {
                    wr_id: op.wr_id,
                    status,
                    opcode,
                    wc_flags: if self.list.sync_required() {
                        WcFlags::TM_SYNC_REQ
                    } else {
                        WcFlags::NONE
                    },
                    ..Wc::default()
                };
                // A full CQ has raised its error event; the operation
                // itself was carried out.
                let _ = cq.push_from_core(wc);
            }
        }
        Ok(())
    }
}
