// SPDX-License-Identifier: GPL-2.0
/*
 * Export table of the `rdma` crate's Rust symbols.
 *
 * exports_generated.h is written by the Kbuild from `nm` of rdma.o: one
 * EXPORT_SYMBOL_RUST_GPL() line per defined Rust (`_R`) symbol. Each symbol is
 * declared with a dummy type, which is all EXPORT_SYMBOL_GPL needs.
 */
#include <linux/export.h>

#define EXPORT_SYMBOL_RUST_GPL(sym) extern int sym; EXPORT_SYMBOL_GPL(sym)

#include "exports_generated.h"

/*
 * The C entry points of the peer memory API (kshim/peer_abi.rs), which
 * peer_mem.ko's ib_register_peer_memory_client and
 * ib_unregister_peer_memory_client call.
 */
EXPORT_SYMBOL_RUST_GPL(rdma_rs_peer_register);
EXPORT_SYMBOL_RUST_GPL(rdma_rs_peer_unregister);
