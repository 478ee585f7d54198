#!/bin/sh
# Runs selftest suites and prints one KTAP report, as kselftest's runner does.
#
# usage: run_selftests.sh SUITE[:PROGRAM]...
# Each suite is a folder whose Makefile lists its programs in TEST_PROGS;
# SUITE:PROGRAM runs one program of a suite.
# A program prints its own KTAP (nested under "# ") and exits 0 (pass),
# 4 (skip) or anything else (fail).

here=$(cd "$(dirname "$0")" && pwd)
KSFT_SKIP=4
timeout_s=${RDMA_RS_TEST_TIMEOUT:-900}

# Where each program's exit status crosses the pipe below.
rcfile=$(mktemp "${TMPDIR:-/tmp}/run_selftests.XXXXXX") || exit 1
trap 'rm -f "$rcfile"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

progs=
for suite in "$@"; do
	case $suite in *:*)
		progs="$progs $suite"
		continue
		;;
	esac
	mk="$here/$suite/Makefile"
	if [ ! -f "$mk" ]; then
		echo "run_selftests: no suite $suite" >&2
		progs="$progs $suite:MISSING"
		continue
	fi
	# TEST_PROGS is one line of names.
	names=$(sed -n 's/^TEST_PROGS[[:space:]]*:*=//p' "$mk")
	for p in $names; do
		progs="$progs $suite:$p"
	done
done

n=0
for _ in $progs; do n=$((n + 1)); done
echo "KTAP version 1"
echo "1..$n"
i=0
for sp in $progs; do
	i=$((i + 1))
	suite=${sp%%:*}
	prog=${sp#*:}
	name="selftests: $suite: $prog"
	echo "# $name"
	if [ "$prog" = MISSING ]; then
		echo "not ok $i $name # no such suite"
		continue
	fi
	: > "$rcfile"
	(cd "$here/$suite" && timeout "$timeout_s" "./$prog" 2>&1; echo "rc=$?" > "$rcfile") |
		while IFS= read -r line; do echo "# $line"; done
	rc=$(sed -n 's/^rc=//p' "$rcfile")
	case "$rc" in
	0) echo "ok $i $name" ;;
	"$KSFT_SKIP") echo "ok $i $name # SKIP" ;;
	124 | 143) echo "not ok $i $name # TIMEOUT ${timeout_s}s" ;;
	*) echo "not ok $i $name # exit=$rc" ;;
	esac
done
