#!/usr/bin/env bash
# Formatting and lint checks; any finding fails.
#
# - kernel Rust (everything but the host crates: tools/ and */proto/): rustfmt (Debian's, matching the kernel's rustc) with the
#   kernel's .rustfmt.toml. Clippy runs during the module build (CLIPPY=1).
# - host workspace: cargo fmt --check and cargo clippy -D warnings.
set -euo pipefail
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
cd "$RDMA_RS_TOP"

mapfile -t files < <(git ls-files '*.rs' | grep -v -E '^tools/|/proto/|_generated\.rs$' || true)
if [ ${#files[@]} -gt 0 ]; then
	"$KRUSTFMT" --check --edition 2021 --config-path "$KDIR/.rustfmt.toml" "${files[@]}"
fi
cargo fmt --all --check
cargo clippy -q --workspace --all-targets -- -D warnings
echo "lint: clean"
