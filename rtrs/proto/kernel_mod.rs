// SPDX-License-Identifier: GPL-2.0

//! The crate `rtrs-proto` as a module of a kernel crate: the same files,
//! compiled unchanged (`#[path = ".../rtrs/proto/kernel_mod.rs"] pub mod
//! proto;`), as `rdma_core` compiles `rdma_core/spec`. The host builds
//! and tests them as the crate (`src/lib.rs`, `cargo test -p rtrs-proto`).

#[path = "src/chunk.rs"]
pub mod chunk;
#[path = "src/conn.rs"]
pub mod conn;
#[path = "src/consts.rs"]
pub mod consts;
#[path = "src/error.rs"]
pub mod error;
#[path = "src/imm.rs"]
pub mod imm;
#[path = "src/le.rs"]
mod le;
#[path = "src/mpath.rs"]
pub mod mpath;
#[path = "src/msg.rs"]
pub mod msg;
#[path = "src/pieces.rs"]
pub mod pieces;
#[path = "src/rnbd.rs"]
pub mod rnbd;
#[path = "src/rnbd_clt.rs"]
pub mod rnbd_clt;
#[path = "src/rnbd_srv.rs"]
pub mod rnbd_srv;

pub use error::Error;
