// SPDX-License-Identifier: GPL-2.0

//! The verbs objects, as the C core's `ib_verbs.h` names them.
//!
//! The core owns each object's queues and checks every request before a
//! provider sees it; providers supply the transport (`qp::QpOps`).
//!
//! - [`pd`]: protection domains; [`ah`]: address handles.
//! - [`mr`], [`mw`]: memory regions and windows, and the checked local and
//!   remote memory access providers perform through them.
//! - [`cq`]: completion queues, the completion dispatch (poll contexts,
//!   `wr_cqe` handlers, moderation) and the per-device CQ [`cq::pool`].
//! - [`srq`]: shared receive queues.
//! - [`qp`]: queue pairs: creation, the state machine (`qp/modify.rs`),
//!   posting (`qp/post.rs`), drain (`qp/drain.rs`) and the provider's side
//!   of the queues (`qp/provider.rs`).
//! - [`umem`]: the memory of regions on user memory: pinned pages, or a
//!   peer memory client's, behind the gate its invalidation closes.
//! - [`uring`]: the rings user CQs and QPs share with user space.
//! - [`wr`], [`wc`]: work requests as posted and completions as polled.
//! - [`restrack`]: the per-device tables every object is numbered in, and
//!   the teardown of objects a ULP leaked; [`object`]: the one life cycle
//!   of every kind (reserve, publish, [`Handle`], destroy, release).

// The bottom layer (`kshim/`) alone holds `unsafe`.
#![deny(unsafe_code)]

pub mod ah;
pub mod cq;
pub mod mr;
pub mod mw;
pub mod object;
pub mod pd;
pub mod qp;
pub mod restrack;
pub mod srq;
pub mod umem;
pub mod uring;
pub mod wc;
pub mod wr;

pub use object::Handle;
