# shellcheck shell=bash
# Sourced by the other scripts: toolchain paths and the cached test kernel.
#
# The kernel's Rust must be built by Debian's rustc-web (it has rust-src);
# the rustup toolchain first on PATH has none, so every kernel make gets
# these variables explicitly.

RDMA_RS_TOP=${RDMA_RS_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
RDMA_RS_CACHE=${RDMA_RS_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/rdma-rs}

KRUSTC=/usr/bin/rustc
KRUST_LIB_SRC=
for _lib in /usr/src/rustc-*/library; do [ -d "$_lib" ] && { KRUST_LIB_SRC=$_lib; break; }; done
unset _lib
KBINDGEN=$(command -v bindgen 2>/dev/null || echo "$HOME/.cargo/bin/bindgen")
KCLIPPY=/usr/bin/clippy-driver
KRUSTFMT=/usr/bin/rustfmt

# Every make invocation against the kernel tree takes these.
# shellcheck disable=SC2034 # used by the scripts that source this file
KMAKE_VARS=(LLVM=1 "RUSTC=$KRUSTC" "HOSTRUSTC=$KRUSTC" "RUST_LIB_SRC=$KRUST_LIB_SRC"
	"BINDGEN=$KBINDGEN" "RUSTFMT=$KRUSTFMT" "CLIPPY_DRIVER=$KCLIPPY")

kernel_tarball() {
	local t
	for t in /usr/src/linux-source-6.12.tar.*; do [ -f "$t" ] && { echo "$t"; break; }; done
	return 0
}

# Which kernel: "test" (the default; Documentation/test-kernel.rst) or
# "bench", the same without its debugging section and built for speed
# (kernel/bench-kernel.config), for `make bench`.
KERNEL_FLAVOR=${KERNEL_FLAVOR:-test}

# The config fragment of the flavor, on stdout. The bench fragment drops the
# test fragment's debugging section and every line that bench-kernel.config
# sets again, then appends bench-kernel.config.
kernel_fragment() {
	local base=$RDMA_RS_TOP/kernel/test-kernel.config
	local over=$RDMA_RS_TOP/kernel/bench-kernel.config
	if [ "$KERNEL_FLAVOR" != bench ]; then
		cat "$base"
		return
	fi
	awk 'NR == FNR { if (match($0, /CONFIG_[A-Z0-9_]+/)) seen[substr($0, RSTART, RLENGTH)] = 1; next }
		/^# --- debugging/ { skip = 1; next }
		/^# --- / { skip = 0 }
		skip { next }
		match($0, /CONFIG_[A-Z0-9_]+/) && (substr($0, RSTART, RLENGTH) in seen) { next }
		{ print }' "$over" "$base"
	cat "$over"
}

# The cache key: source package version + fragment + toolchain versions.
# (Not the build script: bump KERNEL_RECIPE when a change to it must rebuild.)
KERNEL_RECIPE=1
kernel_key() {
	local v h
	v=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null)
	h=$( { echo "$KERNEL_RECIPE"; kernel_fragment;
		"$KRUSTC" --version; clang --version | head -n 1; "$KBINDGEN" --version; } |
		sha256sum | cut -c1-12)
	if [ "$KERNEL_FLAVOR" = test ]; then echo "6.12-$v-$h"; else echo "6.12-$v-$KERNEL_FLAVOR-$h"; fi
}

KDIR=${KDIR:-$RDMA_RS_CACHE/linux-$(kernel_key)}
