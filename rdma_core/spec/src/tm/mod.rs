// SPDX-License-Identifier: GPL-2.0

//! Tag matching in software (the `ibv_post_srq_ops(3)` model of a
//! tag-matching SRQ), sans-IO:
//!
//! - [`header`]: the TMH and RVH at the start of a tagged RC SEND's
//!   payload (rdma-core's `infiniband/tm_types.h`): parsing that never
//!   reads past what it is given, and building (a rendezvous FIN).
//! - [`list`]: the SRQ's list of tagged buffers: matching a tag to the
//!   earliest posted entry that matches it (O(1) for exact tags however
//!   long the list), deleting, consumed entries, and the phase
//!   synchronisation with software's count of unexpected messages.
//!
//! The data path (placing an eager message, the rendezvous READ and FIN,
//! completions) is the provider's; the SRQ object and its operations are
//! `rdma_core/verbs`'.
//!
//! This module uses only `core`.

pub mod header;
pub mod list;
