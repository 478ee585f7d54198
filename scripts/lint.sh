#!/usr/bin/env bash
# Formatting and lint checks; any finding fails.
#
# - kernel Rust (everything but the host crates: tools/, rdma_core/spec/, rxe/wire/ and rtrs/proto/): rustfmt (Debian's, matching the kernel's rustc) with the
#   kernel's .rustfmt.toml. Clippy runs during the module build (CLIPPY=1).
# - host workspace: cargo fmt --check and cargo clippy -D warnings.
# - shell scripts: shellcheck (its own block below).
# - `unsafe` only in rdma_core/kshim/ and the C test peer's binding.
# - imports follow the layer map scripts/layers.conf (tools/layercheck).
set -euo pipefail
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
cd "$RDMA_RS_TOP"

# --- shellcheck --------------------------------------------------------------
# Every tracked shell script: the *.sh files and every file whose first line
# is a sh or bash shebang (scripts/guest/init, .ci/run). The dialect is the
# shebang's: the guest's scripts are #!/bin/sh and checked as POSIX sh (the
# guest runs them with dash); scripts/env.sh, sourced by bash, says so in a
# directive. -x with the script's own folder as source path follows what a
# script sources (selftests/.shellcheckrc holds the selftests' settings).
# Any finding fails, style notes included.
command -v shellcheck > /dev/null ||
	{ echo "lint: shellcheck is missing (scripts/deps.sh installs it)" >&2; exit 1; }
shell_scripts=()
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	case "$f" in
	*.sh) shell_scripts+=("$f") ;;
	*)
		first=
		IFS= read -r first < "$f" || true
		if [[ $first =~ ^#!.*[/[:space:]](ba|da)?sh([[:space:]]|$) ]]; then shell_scripts+=("$f"); fi
		;;
	esac
done < <(git ls-files -z)
shellcheck -x -P SCRIPTDIR "${shell_scripts[@]}"
echo "lint: shellcheck clean (${#shell_scripts[@]} scripts)"
# --- end of shellcheck -------------------------------------------------------

mapfile -t files < <(git ls-files '*.rs' | grep -v -E '^tools/|^rdma_core/spec/|^rxe/wire/|^rtrs/proto/|_generated\.rs$' || true)
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

# Imports run down the layers scripts/layers.conf names (rdma_core's, rtrs's),
# and rxe reaches rdma_core only through rdma::provider (tools/layercheck).
cargo run -q -p layercheck -- scripts/layers.conf .
echo "lint: clean"
