// SPDX-License-Identifier: GPL-2.0

//! The benchmark's memory rows: what one QP, one CQ and one MR cost on
//! each stack, in bytes of the guest's RAM.
//!
//! Computed, not read from slab counters: the providers allocate from
//! generic slabs, from `vmalloc` (the kernel's rxe queues) and from the
//! page allocator (large `kmalloc`s), so no one counter holds an object.
//! Instead [`COUNT`] objects of a kind are made on the device of each
//! stack, everything they need (a PD, the CQ the QPs share, the table that
//! holds them) made before, and the guest's RAM in use is read just before
//! and just after ([`rdma::kshim::usage::ram_in_use`]); the difference over
//! [`COUNT`] is the row. Pages on the per-CPU free lists count as in use,
//! so a run can be off by a batch of pages: a few hundred bytes an object
//! at this count; the table's spread shows it.

use kernel::error::code::ENODEV;
use kernel::prelude::*;
use kernel::str::CStr;

use rdma::device;
use rdma::kshim::usage;
use rdma::verbs::cq::Cq;
use rdma::verbs::mr::Mr;
use rdma::verbs::pd::Pd;
use rdma::verbs::qp::{Qp, QpCap};

use crate::cpeer_sys::objs::{CObjects, ObjKind};
use crate::rc::{self, Opts};

/// Objects made per measurement.
pub(crate) const COUNT: u32 = 256;
/// Queue depth of the QPs (sends and receives, one SGE each, no inline
/// data) and CQs, and pages of the fast registration MRs: the benchmark's
/// own queue depth.
pub(crate) const DEPTH: u32 = 128;

/// The row names of the kinds.
pub(crate) const KINDS: [(&str, ObjKind); 3] = [
    ("qp", ObjKind::Qp),
    ("cq", ObjKind::Cq),
    ("mr", ObjKind::Mr),
];

/// Bytes of RAM that [`COUNT`] objects of `kind` took on our device `dev`.
pub(crate) fn ours(dev: &CStr, kind: ObjKind) -> Result<u64> {
    let dev = device::get_by_name(dev).ok_or(ENODEV)?;
    let pd = Pd::alloc(dev.arc())?;
    let cq = Cq::create(dev.arc(), DEPTH + 1, None)?;
    let o = Opts {
        cap: QpCap {
            max_send_wr: DEPTH,
            max_recv_wr: DEPTH,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        },
        ..rc::RC
    };
    let n = COUNT as usize;
    let (mut qps, mut cqs, mut mrs) = (KVec::<Qp>::new(), KVec::<Cq>::new(), KVec::<Mr>::new());
    match kind {
        ObjKind::Qp => qps.reserve(n, GFP_KERNEL)?,
        ObjKind::Cq => cqs.reserve(n, GFP_KERNEL)?,
        ObjKind::Mr => mrs.reserve(n, GFP_KERNEL)?,
    }
    let before = usage::ram_in_use();
    for _ in 0..n {
        match kind {
            ObjKind::Qp => qps.push(rc::create_qp(&pd, &cq, &cq, &o)?, GFP_KERNEL)?,
            ObjKind::Cq => cqs.push(Cq::create(dev.arc(), DEPTH, None)?, GFP_KERNEL)?,
            ObjKind::Mr => mrs.push(Mr::alloc_fast_reg(pd.core(), DEPTH)?, GFP_KERNEL)?,
        }
    }
    let after = usage::ram_in_use();
    // The QPs before their CQ and PD (the fields would drop in any order).
    drop(qps);
    drop(mrs);
    drop(cqs);
    Ok(after.saturating_sub(before))
}

/// Bytes of RAM that [`COUNT`] objects of `kind` took on the kernel's
/// device `dev` (through `rxe_cpeer`).
pub(crate) fn theirs(dev: &CStr, kind: ObjKind) -> Result<u64> {
    let mut objs = CObjects::new(dev, kind, COUNT, DEPTH)?;
    let before = usage::ram_in_use();
    objs.make()?;
    let after = usage::ram_in_use();
    Ok(after.saturating_sub(before))
}
