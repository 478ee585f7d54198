// SPDX-License-Identifier: GPL-2.0
/*
 * Export table of the `peer_memory` crate's Rust symbols, for peer memory
 * clients written in Rust (scripts/kbuild/rust-crate.mk writes
 * exports_generated.h from `nm` of peer_memory.o).
 */
#include <linux/export.h>

#define EXPORT_SYMBOL_RUST_GPL(sym) extern int sym; EXPORT_SYMBOL_GPL(sym)

#include "exports_generated.h"
