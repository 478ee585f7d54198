#!/usr/bin/env bash
# Install everything the build and the tests need, when it is missing.
#
# Debian packages: the 6.12 kernel source, the Debian rustc that has rust-src
# (rustc-web + rust-web-src), clang/LLVM for bindgen and the LLVM=1 KASAN build,
# the kernel build tools, QEMU and busybox for the guest, and the userspace RDMA
# tools that drive the kernel's C stack inside the guest, and python3-pyverbs,
# which ships rdma-core's own test suite; e2fsprogs for the RNBD
# block devices' tests; shellcheck for
# `make lint`.
# crates.io: bindgen-cli.
set -euo pipefail

pkgs=(
	linux-source-6.12 rustc-web rust-web-src rust-web-clippy rustfmt-web
	clang lld llvm libclang-dev
	flex bison bc libelf-dev libssl-dev cpio kmod xz-utils gcc libc6-dev
	qemu-system-x86 busybox-static
	ibverbs-utils rdmacm-utils perftest ibverbs-providers iproute2
	python3 python3-pyverbs
	linux-perf
	e2fsprogs
	shellcheck
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v bindgen >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/bindgen" ]; then
	echo "deps: installing bindgen-cli from crates.io"
	cargo install --locked --quiet bindgen-cli --version '^0.73'
fi
