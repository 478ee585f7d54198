#!/usr/bin/env bash
# Formatting and lint checks; any finding fails.
#
# - kernel Rust (everything but the host crates: tools/, rdma_core/spec/ and rxe/wire/): rustfmt (Debian's, matching the kernel's rustc) with the
#   kernel's .rustfmt.toml. Clippy runs during the module build (CLIPPY=1).
# - host workspace: cargo fmt --check and cargo clippy -D warnings.
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$RDMA_RS_TOP"

mapfile -t files < <(git ls-files '*.rs' | grep -v -E '^tools/|^rdma_core/spec/|^rxe/wire/|_generated\.rs$' || true)
if [ ${#files[@]} -gt 0 ]; then
	"$KRUSTFMT" --check --edition 2021 --config-path "$KDIR/.rustfmt.toml" "${files[@]}"
fi
cargo fmt --all --check

# `unsafe` lives only in rdma_core's bottom layer (rdma_core/kshim/) and in
# the binding of the C test peer (selftests/rxe/modules/cpeer_sys.rs).
# Providers, ULPs and test modules also carry #![forbid(unsafe_code)] (or
# deny, where cpeer_sys must be allowed), and rdma_core's device/ and verbs/
# #![deny(unsafe_code)]: this check also covers what the compiler does not
# build here (doc comments and comment lines aside).
unsafe_outside=$(git grep --untracked -nwE 'unsafe' -- '*.rs' \
	':!rdma_core/kshim/' ':!rdma_core/kshim/**' ':!selftests/rxe/modules/cpeer_sys.rs' |
	grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
if [ -n "$unsafe_outside" ]; then
	echo "lint: unsafe outside rdma_core/kshim/:" >&2
	echo "$unsafe_outside" >&2
	exit 1
fi
cargo clippy -q --workspace --all-targets -- -D warnings
echo "lint: clean"
