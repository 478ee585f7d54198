#!/usr/bin/env bash
# Boot test guests under QEMU (TCG), stream their console, judge the run.
#
# usage: scripts/vm.sh [--tests SUITE,...] [--mode check|run|bench] [--guests N]
#                      [--timeout SECONDS] [--expect-splat] [--name NAME]
#
# Each guest gets ttyS0 (kernel console, streamed here and saved) and ttyS1
# (KTAP results). With --guests 2 the guests are joined by a QEMU socket
# network over host loopback (eth0 in each); a lone guest has a NIC joined
# to nothing (lone0). The verdict is guestlog's: every test passed, the
# guest reached its end marker, and no kernel splat; with --expect-splat,
# the run passes only if a splat was found.
set -euo pipefail
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"

tests='' mode=check guests=1 timeout_s=1200 expect='' name=guest
while [ $# -gt 0 ]; do
	case "$1" in
	--tests) tests=$2; shift ;;
	--mode) mode=$2; shift ;;
	--guests) guests=$2; shift ;;
	--timeout) timeout_s=$2; shift ;;
	--expect-splat) expect=--expect-splat ;;
	--name) name=$2; shift ;;
	*) echo "vm.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

out=$RDMA_RS_TOP/.build/vm/$name
rm -rf "$out"
mkdir -p "$out"
initrd=${RDMA_RS_INITRD:-$RDMA_RS_TOP/.build/initramfs.cpio}
[ -f "$initrd" ] || "$RDMA_RS_TOP/scripts/initramfs.sh" "$initrd"
guestlog=$RDMA_RS_TOP/target/release/guestlog
[ -x "$guestlog" ] || (cd "$RDMA_RS_TOP" && cargo build -q --release -p guestlog)

boot_guests() {
	# A free loopback TCP port for the socket network between guests.
	port=$(( 20000 + (($$ + RANDOM) % 20000) ))

	pids=()
	for g in $(seq 0 $((guests - 1))); do
		net=()
		if [ "$guests" -gt 1 ]; then
			if [ "$g" -eq 0 ]; then sock="listen=127.0.0.1:$port"; else sock="connect=127.0.0.1:$port"; fi
			net=(-netdev "socket,id=n0,$sock" -device "virtio-net-pci,netdev=n0,mac=52:54:00:77:00:0$g")
		else
			# A lone guest's NIC: a netdev with a parent device (the
			# virtio device), for the suites that need one
			# (rxe/pyverbs.sh). On QEMU's user network, restricted (no
			# way out) and without IPv6 (no router advertisements): what
			# it sends is taken and dropped. (On an empty hub nothing
			# takes the frames and its transmit queue times out.) The
			# guest's init names it lone0 by its MAC: eth0 stays the
			# multihost suites' sign of a joined guest.
			net=(-netdev "user,id=n0,restrict=on,ipv6=off" -device "virtio-net-pci,netdev=n0,mac=52:54:00:77:01:00")
		fi
		: > "$out/console$g.log"
		# la57=off: no 5-level paging. The rare boot-time KASAN report
		# that the retry below absorbs faulted at a 5-level direct-map
		# address; this removes the likeliest cause under TCG. One CPU:
		# the test kernel has no ACPI and would find only one anyway;
		# make check runs two guests at once on a 2-core machine.
		timeout --foreground "$timeout_s" qemu-system-x86_64 \
			-accel tcg -cpu max,la57=off -smp 1 -m 2G \
			-display none -monitor none -no-reboot \
			-kernel "$KDIR/arch/x86/boot/bzImage" -initrd "$initrd" \
			-append "console=ttyS0 panic=-1 loglevel=7 ${RDMA_RS_APPEND:-}rdma_rs.tests=$tests rdma_rs.mode=$mode rdma_rs.guest=$g" \
			-serial "file:$out/console$g.log" -serial "file:$out/ktap$g.log" \
			"${net[@]}" < /dev/null > "$out/qemu$g.log" 2>&1 &
		pids+=($!)
		# The listening guest must be up before the connecting one starts.
		[ "$guests" -gt 1 ] && [ "$g" -eq 0 ] && sleep 1
	done

	# Stream the consoles while the guests run (prefixed by guest when several).
	tails=()
	for g in $(seq 0 $((guests - 1))); do
		if [ "$guests" -gt 1 ]; then
			tail -n +1 -F "$out/console$g.log" 2>/dev/null | sed -u "s/^/[guest$g] /" &
		else
			tail -n +1 -F "$out/console$g.log" 2>/dev/null &
		fi
		tails+=($!)
	done
	rc=0
	for p in "${pids[@]}"; do wait "$p" || rc=$?; done
	sleep 0.5
	pkill -P $$ tail 2>/dev/null || true
	kill "${tails[@]}" 2>/dev/null || true
	wait "${tails[@]}" 2>/dev/null || true
	if [ $rc -eq 124 ]; then echo "vm.sh: guest timed out after ${timeout_s}s"; fi
	if [ $rc -ne 0 ] && [ -s "$out/qemu0.log" ]; then cat "$out"/qemu*.log; fi
	return 0
}

# judge: guestlog's verdict on every guest. Sets boot_splat_only when every
# failure is a splat printed before the kernel started /init, that is before
# any module or test of ours could run (seen once: a KASAN report in an
# interrupt during CPU identification under TCG).
judge() {
	verdict=0
	boot_splat_only=1
	report=
	for g in $(seq 0 $((guests - 1))); do
		report+="vm.sh: verdict for $name guest $g:"$'\n'
		if res=$("$guestlog" check --ktap "$out/ktap$g.log" --console "$out/console$g.log" $expect 2>&1); then
			report+="$res"$'\n'
			continue
		fi
		report+="$res"$'\n'
		verdict=1
		init=$(grep -n "Run /init as init process" "$out/console$g.log" | head -1 | cut -d: -f1)
		lines=$(echo "$res" | sed -n 's/^guestlog: splat .* at console line \([0-9]*\).*/\1/p')
		if [ -z "$init" ] || [ -z "$lines" ] || echo "$res" | grep -q "^guestlog: FAILED"; then
			boot_splat_only=0
		fi
		for l in $lines; do [ "$l" -lt "${init:-0}" ] || boot_splat_only=0; done
	done
}

boot_guests
judge
if [ $verdict -ne 0 ] && [ $boot_splat_only -eq 1 ] && [ -z "$expect" ]; then
	# The discarded boot's verdict is shown, marked, so that summaries that
	# count "guest:" lines count the kept boot only.
	printf '%s' "$report" | sed 's/^/vm.sh: discarded boot: /'
	echo "vm.sh: $name: the only failure is a splat during kernel boot, before /init; booting once more"
	boot_guests
	judge
fi
printf '%s' "$report"
exit $verdict
