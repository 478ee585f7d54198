# SPDX-License-Identifier: GPL-2.0
#
# rdma-rs: the Linux RDMA stack in Rust-for-Linux, as out-of-tree modules.
#
#   make run      boot a guest, load the stack, show it working
#   make check    everything: deps, kernel, modules, lint, host tests, guest tests
#   make bench    our rxe and RTRS against the kernel's: a table of ratios
#                 (BENCH=rxe, BENCH=rtrs or BENCH=perftest: that part alone)
#
# Other targets: deps, kernel, modules, lint, test-host, fuzz, initramfs, guest-test,
# multihost-test, harness-test, clean. See README.md and Documentation/.

SHELL := /bin/bash
TOP := $(CURDIR)
ENV := . $(TOP)/scripts/env.sh

# Module build against the cached kernel, with the Debian rustc (see env.sh).
KMAKE = $(ENV) && $(MAKE) -C "$$KDIR" M=$(TOP) "$${KMAKE_VARS[@]}"

.PHONY: all deps kernel modules lint test-host fuzz initramfs guest-test multihost-test harness-test \
	check run bench clean

all: modules

deps:
	@scripts/deps.sh

kernel: deps
	@scripts/kernel.sh

# CLIPPY=1 builds with clippy-driver, so every Rust object is linted as it is
# compiled; with -Dwarnings (Kbuild) a lint fails the build.
modules: kernel
	@$(KMAKE) CLIPPY=1 modules

lint: kernel
	@scripts/lint.sh

test-host:
	@cargo test --workspace

# The wire codec's parser, fuzzed on the stable toolchain: 5 million
# mutated inputs from its corpus, bounded to 10 minutes (tools/wirefuzz).
FUZZ_INPUTS ?= 5000000
fuzz:
	@cargo run -q --release -p wirefuzz -- rxe/wire/fuzz/corpus/parse $(FUZZ_INPUTS) 600

initramfs: modules
	@scripts/initramfs.sh $(TOP)/.build/initramfs.cpio

GUEST_SUITES ?= foundation,core,rxe,peer_mem,rtrs
guest-test: initramfs
	@scripts/vm.sh --name check --tests $(GUEST_SUITES)

multihost-test: initramfs
	@scripts/vm.sh --name multihost --tests multihost --guests 2

harness-test: initramfs
	@scripts/vm.sh --name harness --tests harness --expect-splat

check:
	@scripts/check.sh

run: initramfs
	@scripts/vm.sh --name run --mode run --guests 2 --timeout 2400

# Builds its own kernel flavor and modules (scripts/bench.sh).
bench:
	@BENCH=$(BENCH) scripts/bench.sh

clean:
	@$(KMAKE) clean 2>/dev/null || true
	@rm -rf .build
	@find . -name '*.rmeta' -o -name '*_generated.*' | xargs rm -f
