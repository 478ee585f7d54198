#!/usr/bin/env bash
# make bench: our rxe against the kernel's rdma_rxe, our RTRS against the
# kernel's, and our RNBD against the kernel's, the same kernel-space workloads in one guest boot, on the benchmark kernel (the test kernel
# without its debugging options: kernel/bench-kernel.config); writes the
# table to .build/bench/table.txt and prints it. Documentation/bench.rst
# says what is measured and how to read it.
#
# The modules are built against the benchmark kernel in a copy of the
# sources under the cache, so the test build in the tree stays as it is.
set -euo pipefail
export KERNEL_FLAVOR=bench
# BENCH=rxe, BENCH=rtrs, BENCH=rnbd or BENCH=perftest runs that part
# alone (selftests/bench.sh); BENCH=tm the host part alone (no kernel, no
# guest).
part=${BENCH:-all}
case "$part" in all | rxe | rtrs | rnbd | perftest | tm) ;; *) echo "bench: BENCH=rxe, rtrs, rnbd, perftest, tm or nothing, not '$part'" >&2; exit 2 ;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=env.sh
. "$top/scripts/env.sh"

"$top/scripts/deps.sh"

# The host part: the tag-matching list against a plain linked-list
# matcher (tools/tmbench), one core of the host.
tm_bench() {
	(cd "$top" && cargo build -q --release -p tmbench) && "$top/target/release/tmbench"
}
if [ "$part" = tm ]; then
	mkdir -p "$top/.build/bench"
	tm_bench | tee "$top/.build/bench/tm.txt"
	exit "${PIPESTATUS[0]}"
fi
"$top/scripts/kernel.sh"

# One benchmark at a time on this machine (two work trees share the copy
# and the guest's directory), each built from a fresh copy of the sources:
# what an earlier, perhaps interrupted, build left there is not reused.
src=$RDMA_RS_CACHE/bench-src
exec 9> "$RDMA_RS_CACHE/bench.lock"
flock -n 9 || { echo "bench: waiting for another make bench on this machine"; flock 9; }
rm -rf "$src"
mkdir -p "$src"
# The tracked and the new files of the work tree (not its build products).
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	cpio -0 -pdm --quiet "$src")
echo "bench: building the modules against $KDIR"
make -s -C "$KDIR" M="$src" "${KMAKE_VARS[@]}" modules
out=$top/.build/bench
mkdir -p "$out"
RDMA_RS_TOP=$src "$src/scripts/initramfs.sh" "$out/initramfs.cpio"

# The guest keeps time by the TSC, or the 4 ms steps of jiffies would be
# the resolution of every figure and of every timer (a 50 us sleep would
# last until the next tick). Under TCG the guest's TSC is the host's, but
# the benchmark kernel (no ACPI, so no HPET or PM timer) can calibrate it
# only against the emulated PIT, which fails now and then under TCG (the
# kernel then falls back to jiffies): tsc_early_khz gives it the host's rate
# (scripts/tsc-khz.c). tsc=reliable: the clocksource watchdog would find
# the TSC skewed against jiffies under TCG and fall back to them.
clock="tsc=reliable "
if cc -O2 -o "$out/tsc-khz" "$top/scripts/tsc-khz.c" && khz=$("$out/tsc-khz"); then
	clock+="tsc_early_khz=$khz "
else
	echo "bench: the host's TSC rate is unknown; the guest keeps time by jiffies (4 ms steps)" >&2
fi
RDMA_RS_APPEND="$clock rdma_rs.bench=$part " RDMA_RS_INITRD=$out/initramfs.cpio "$top/scripts/vm.sh" --name bench --mode bench --timeout 3600 |
	tee "$out/guest.log" | grep -E "^(ok|not ok|#) |vm.sh:" || true
results=$top/.build/vm/bench/ktap0.log
[ -s "$results" ] || { echo "bench: the guest printed no results (see $out/guest.log)" >&2; exit 1; }
# A part that did not run to the end is reported after the table, which
# keeps every row that ran (a failed run is a FAILED row), and fails the
# command.
missing=()
if [ "$part" = all ] || [ "$part" = rxe ]; then
	grep -q "^ok .* rdma_rxe_bench" "$results" || missing+=("the rxe benchmark did not run to the end")
	grep -q "^ok .* rdma_rxe_tm_bench" "$results" || missing+=("the tag-matching benchmark did not run to the end")
fi
if [ "$part" != rtrs ] && [ "$part" != rnbd ]; then
	if ! grep -q "^ok .* perftest_ours" "$results" || ! grep -q "^ok .* perftest_theirs" "$results"; then
		missing+=("perftest did not run on both stacks")
	fi
fi
if [ "$part" = all ] || [ "$part" = rtrs ]; then
	grep -q "^ok [0-9]* rtrs" "$results" || missing+=("the RTRS benchmark did not run to the end")
fi
if [ "$part" = all ] || [ "$part" = rnbd ]; then
	grep -Eq "^ok [0-9]+ rnbd[[:space:]]*$" "$results" || missing+=("the RNBD benchmark did not run to the end")
fi

# The table: one row per workload, ours and theirs side by side.
{
	echo "rdma-rs benchmark, $(date -u +%Y-%m-%d), kernel $(cat "$KDIR/include/config/kernel.release") (bench config)"
	echo "host: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "guest: QEMU TCG (no KVM), 1 vCPU, 2 GiB; absolute figures mean little, ratios do"
	# The clock the guest kept time by (see above).
	cs=$(tr -d '\r' < "$out/guest.log" | sed -n 's/.*clocksource: Switched to clocksource //p' | tail -n 1)
	if [ "$cs" = tsc ] || [ "$cs" = tsc-early ]; then
		echo "guest clock: $cs (${khz:-?} kHz)"
	else
		echo "guest clock: ${cs:-unknown} (not the TSC: figures and timers in steps of 4 ms)"
	fi
	echo
	sed -n 's/^# bench: //p' "$results" | awk -f "$top/scripts/bench-table.awk"
	if [ "$part" = all ]; then
		echo
		tm_bench
	fi
} > "$out/table.txt"
cat "$out/table.txt"
# The profile of the second run (perf in the guest), for where the time goes.
sed -n 's/^# profile: //p' "$results" > "$out/profile.txt"
sed -n 's/^# rtrs profile: //p' "$results" > "$out/rtrs-profile.txt"
sed -n 's/^# rtrs C profile: //p' "$results" > "$out/rtrs-c-profile.txt"
echo "bench: table in $out/table.txt, profiles in $out/profile.txt (rxe), rtrs-profile.txt and rtrs-c-profile.txt (RTRS, ours and the kernel's)"
if [ ${#missing[@]} -gt 0 ]; then
	for m in "${missing[@]}"; do echo "bench: $m (see $out/guest.log)" >&2; done
	exit 1
fi
