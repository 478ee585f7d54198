# SPDX-License-Identifier: GPL-2.0
# kselftest-style targets for a suite folder (included by its Makefile):
# `make run_tests` runs the suite's TEST_PROGS on this machine and prints
# KTAP; the modules must be installed (modprobe finds them).
SUITE := $(notdir $(patsubst %/,%,$(dir $(abspath $(firstword $(MAKEFILE_LIST))))))

run_tests:
	@../run_selftests.sh $(SUITE)

.PHONY: run_tests
