#!/usr/bin/env bash
# Formatting and lint checks; any finding fails.
#
# - kernel Rust (everything but the host crates: tools/ and */proto/): rustfmt (Debian's, matching the kernel's rustc) with the
#   kernel's .rustfmt.toml. Clippy runs during the module build (CLIPPY=1).
# - host workspace: cargo fmt --check and cargo clippy -D warnings.
# - shell scripts: shellcheck (its own block below).
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

mapfile -t files < <(git ls-files '*.rs' | grep -v -E '^tools/|/proto/|_generated\.rs$' || true)
if [ ${#files[@]} -gt 0 ]; then
	"$KRUSTFMT" --check --edition 2021 --config-path "$KDIR/.rustfmt.toml" "${files[@]}"
fi
cargo fmt --all --check
cargo clippy -q --workspace --all-targets -- -D warnings
echo "lint: clean"
