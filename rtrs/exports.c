// SPDX-License-Identifier: GPL-2.0
/*
 * Export table of the `rtrs` crate's Rust symbols, for the ULPs built on
 * it (scripts/kbuild/rust-crate.mk writes exports_generated.h from `nm` of
 * rtrs.o).
 */
#include <linux/export.h>

#define EXPORT_SYMBOL_RUST_GPL(sym) extern int sym; EXPORT_SYMBOL_GPL(sym)

#include "exports_generated.h"
