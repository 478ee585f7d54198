#!/usr/bin/env bash
# `make check`: every stage, then one summary line.
#
# Stages: deps, kernel (cached), modules (with clippy), lint, host tests,
# the wire parser's fuzzing (tools/wirefuzz, one test), initramfs, guestlog
# (the host's judge of the guests), the guest selftests (two lone guests at
# once, then two joined guests), and the harness's own negative test (a
# guest that WARNs must be judged failed).
# Test counts come from cargo test and from the guests' KTAP. A build or lint
# stage that fails counts as one failure and ends the run, since nothing
# after it can be trusted; a guest run judged failed without a failed test (a
# splat, a crash, a timeout) counts as one failure. CI shows only the end of
# the output, so the guestlog verdicts of the failed guest runs (what failed
# and why) are printed again right above the summary line.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
log=.build/check
mkdir -p "$log"

passed=0 failed=0 skipped=0
failed_runs=()
summary() {
	echo
	failed_verdicts
	echo "check: ${passed} passed, ${failed} failed, ${skipped} skipped"
	[ "$failed" -eq 0 ]
	exit $?
}

# The "guestlog:" lines of each failed guest run's log, "[name] " first; the
# last 60 of them at most.
failed_verdicts() {
	local name lines total max=60
	[ "${#failed_runs[@]}" -gt 0 ] || return 0
	lines=$(for name in "${failed_runs[@]}"; do
		grep '^guestlog:' "$log/vm-$name.log" 2>/dev/null | sed "s/^/[$name] /"
	done)
	[ -n "$lines" ] || return 0
	total=$(printf '%s\n' "$lines" | wc -l)
	if [ "$total" -gt "$max" ]; then
		echo "=== check: verdicts of the failed guest runs (last $max of $total lines):"
	else
		echo "=== check: verdicts of the failed guest runs:"
	fi
	printf '%s\n' "$lines" | tail -n "$max"
}

# Runs a make target that must succeed; a failure ends the run.
stage() {
	local t=$1 start=$SECONDS
	echo "=== check: $t"
	if make --no-print-directory "$t" 2>&1 | tee "$log/$t.log"; then
		echo "=== check: $t ok ($((SECONDS - start)) s)"
	else
		echo "=== check: $t FAILED (see $log/$t.log)"
		failed=$((failed + 1))
		summary
	fi
}

# Adds up the "<sed capture of passed, failed, skipped>" lines of a log.
add_counts() {
	local file=$1 expr=$2 p f s
	while read -r p f s; do
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	done < <(sed -n "$expr" "$file")
}

# Starts scripts/vm.sh in the background: its output is saved and streamed
# with a "[name] " prefix; guest_finish waits for it and adds its counts.
guest_start() {
	local name=$1
	shift
	echo "=== check: guest run '$name' started"
	rm -f "$log/vm-$name.rc"
	{
		scripts/vm.sh --name "$name" "$@" 2>&1
		echo $? > "$log/vm-$name.rc"
	} | tee "$log/vm-$name.log" | sed -u "s/^/[$name] /" &
}

# Adds the counts of a finished guest run; a run judged failed without a
# failed test counts as one failure. A run judged failed is kept in
# failed_runs for summary.
guest_finish() {
	local name=$1 start=$2 rc
	rc=$(cat "$log/vm-$name.rc" 2>/dev/null) || rc=1
	[ "$rc" -eq 0 ] || failed_runs+=("$name")
	add_counts "$log/vm-$name.log" \
		's/^guest: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p'
	if [ "$rc" -ne 0 ] && ! grep -q '^guestlog: FAILED' "$log/vm-$name.log"; then
		echo "=== check: guest run '$name' judged failed (splat, crash or timeout)"
		failed=$((failed + 1))
	fi
	echo "=== check: guest run '$name' done ($((SECONDS - start)) s)"
}

# One guest run, waited for.
guest_run() {
	local name=$1 start=$SECONDS
	shift
	guest_start "$name" "$@"
	wait
	guest_finish "$name" "$start"
}

# SUITE or SUITE:PROGRAM arguments as SUITE:PROGRAM lines, in the order
# run_selftests.sh runs them (each suite's TEST_PROGS).
programs() {
	local s
	for s in "$@"; do
		case $s in
		*:*) echo "$s" ;;
		*) sed -n 's/^TEST_PROGS[[:space:]]*:*=//p' "selftests/$s/Makefile" |
			tr -s ' \t' '\n' | sed -n "s/^./$s:&/p" ;;
		esac
	done
}

stage deps
stage kernel
stage modules
stage lint

echo "=== check: test-host"
cargo test --workspace 2>&1 | tee "$log/test-host.log"
host_rc=${PIPESTATUS[0]}
add_counts "$log/test-host.log" \
	's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p'
if [ "$host_rc" -ne 0 ] && ! grep -q '^test result: FAILED' "$log/test-host.log"; then
	failed=$((failed + 1))
fi

# The wire parser under 5 million mutated inputs (a panic is a failure).
echo "=== check: fuzz"
if make --no-print-directory fuzz 2>&1 | tee "$log/fuzz.log"; then
	passed=$((passed + 1))
else
	echo "=== check: fuzz FAILED (see $log/fuzz.log)"
	failed=$((failed + 1))
fi

echo "=== check: initramfs"
scripts/initramfs.sh .build/initramfs.cpio || { failed=$((failed + 1)); summary; }

# vm.sh builds guestlog only when it is missing: build it here, so that an
# old one left in target/ never judges the guests.
echo "=== check: guestlog"
cargo build -q --release -p guestlog || { failed=$((failed + 1)); summary; }

# The suites take about 64 minutes of guest time here. A guest has one CPU
# (QEMU's TCG, one host thread) and this machine two: two guests at once
# take them in about half that. check-1 runs foundation, core and rxe up to
# rdma_ucm (some 33 minutes), check-2 rdma-core's own tests (rxe's
# pyverbs.sh), peer_mem and rtrs (some 31). GUEST_SUITES=... runs the suites
# named in one guest instead. The limit leaves room for a slower host.
if [ -n "${GUEST_SUITES:-}" ]; then
	guest_run check --timeout 3600 --tests "$GUEST_SUITES"
else
	all=$(programs foundation core rxe peer_mem rtrs)
	second_from=rxe:pyverbs.sh
	first=$(echo "$all" | sed "\|^$second_from\$|,\$d" | paste -sd,)
	second=$(echo "$all" | sed -n "\|^$second_from\$|,\$p" | paste -sd,)
	start=$SECONDS
	guest_start check-1 --timeout 3600 --tests "$first"
	[ -z "$second" ] || guest_start check-2 --timeout 3600 --tests "$second"
	wait
	guest_finish check-1 "$start"
	[ -z "$second" ] || guest_finish check-2 "$start"
fi
guest_run multihost --tests multihost --guests 2

echo "=== check: harness self-test (a guest that WARNs must be judged failed)"
if scripts/vm.sh --name harness --tests harness --expect-splat > "$log/vm-harness.log" 2>&1 &&
	grep -q 'splat (WARNING)' "$log/vm-harness.log"; then
	echo "ok: the harness reported the deliberate WARNING"
	passed=$((passed + 1))
else
	echo "not ok: the harness did not report the deliberate WARNING (see $log/vm-harness.log)"
	failed=$((failed + 1))
	failed_runs+=(harness)
fi

summary
