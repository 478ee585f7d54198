#!/bin/sh
# `make bench`, in the guest: the same kernel-space workload on our rxe and
# on the kernel's rdma_rxe (modules/rdma_rxe_bench.rs says which), perftest
# on both stacks for the userspace view (ours through rdma_rs_uverbs first,
# before the C stack is loaded), then the same RTRS
# load on our RTRS and on the kernel's (rtrs/ulp/rtrs_bench.rs and
# rtrs/cbench/rtrs_cbench.c). Prints KTAP, with the figures as
# "# bench: ..." lines that scripts/bench.sh turns into a table.
cd "$(dirname "$0")/rxe" || exit 1
# shellcheck source=lib/ktap.sh
. ../lib/ktap.sh
# shellcheck source=lib/cleanup.sh
. ../lib/cleanup.sh
# shellcheck source=lib/netns.sh
. ../lib/netns.sh
# shellcheck source=lib/rxe.sh
. ../lib/rxe.sh
# shellcheck source=lib/rnbd.sh
. ../lib/rnbd.sh

cfs=/sys/kernel/config/rdma_rs_rxe

# Ours: rbo0 (10.83.0.1) in namespace bna, rbo1 (10.83.0.2) in bnb.
ours() {
	modprobe rdma_rs_rxe && netns_add bna bnb && netns_veth bna bo0 bnb bo1 &&
		ip -n bna link set bo0 mtu 9000 && ip -n bnb link set bo1 mtu 9000 &&
		netns_addr bna bo0 10.83.0.1/24 && netns_addr bnb bo1 10.83.0.2/24 &&
		rxe_bind bna bo0 rbo0 && rxe_bind bnb bo1 rbo1
}

# Theirs: cbo0 (10.84.0.1) and cbo1 (10.84.0.2), both in the initial
# namespace, the only one where rdma_rxe listens. Without help the kernel
# would deliver packets between two local addresses through lo (and rxe
# would drop them there): rules send what leaves by bc0 (rxe routes with
# the device as output interface) to bc1 and back, the local table moves
# after them, static neighbours spare ARP, and source validation accepts
# local addresses arriving from the wire. All of that is undone at exit
# (the routes and neighbours go with the veth pair).
theirs() {
	modprobe rdma_rxe && modprobe rdma_cm && netns_veth - bc0 - bc1 &&
		ip link set bc0 mtu 9000 && ip link set bc1 mtu 9000 &&
		netns_addr - bc0 10.84.0.1/24 && netns_addr - bc1 10.84.0.2/24 &&
		c_rxe_add cbo0 bc0 && c_rxe_add cbo1 bc1 || return 1
	for d in all default; do
		rp=$(sysctl -n "net.ipv4.conf.$d.rp_filter") && al=$(sysctl -n "net.ipv4.conf.$d.accept_local") &&
			cleanup_add sysctl -qw "net.ipv4.conf.$d.rp_filter=$rp" "net.ipv4.conf.$d.accept_local=$al"
	done
	for d in all default bc0 bc1; do
		sysctl -qw "net.ipv4.conf.$d.rp_filter=0" "net.ipv4.conf.$d.accept_local=1" || return 1
	done
	ip rule add pref 10 oif bc0 lookup 100 && cleanup_add ip rule del pref 10 &&
		ip route add 10.84.0.2 dev bc0 src 10.84.0.1 table 100 &&
		ip rule add pref 11 oif bc1 lookup 101 && cleanup_add ip rule del pref 11 &&
		ip route add 10.84.0.1 dev bc1 src 10.84.0.2 table 101 &&
		ip rule add pref 100 lookup local && cleanup_add ip rule del pref 100 &&
		ip rule del pref 0 && cleanup_add ip rule add pref 0 lookup local &&
		ip neigh replace 10.84.0.2 lladdr "$(cat /sys/class/net/bc1/address)" dev bc0 nud permanent &&
		ip neigh replace 10.84.0.1 lladdr "$(cat /sys/class/net/bc0/address)" dev bc1 nud permanent
}

now_ns() {
	awk '{ printf "%.0f", $1 * 1e9 }' /proc/uptime
}

# One perftest run in loopback on one device, server and client in the
# initial namespace: stack (ours: rbo0, whose RoCE v2 GID is 10.83.0.1,
# the out-of-band TCP exchange over 127.0.0.1, as rbo0's address lives in
# namespace bna; theirs: cbo0, 10.84.0.1), tool, size, iterations. Prints
# how long the client took, in nanoseconds.
perftest_once() { # ours|theirs tool size iterations
	if [ "$1" = ours ]; then d=rbo0 tail=0a53:0001 to=127.0.0.1; else d=cbo0 tail=0a54:0001 to=10.84.0.1; fi
	x=$(roce_v2_gid_index "$d" "$tail") || return 1
	"$2" -d "$d" -x "$x" -s "$3" -n "$4" -F > "$tmpd/pt_srv.log" 2>&1 &
	srv=$!
	cleanup_add kill "$srv"
	sleep 1
	t0=$(now_ns)
	timeout 300 "$2" -d "$d" -x "$x" -s "$3" -n "$4" -F "$to" > "$tmpd/pt_cli.log" 2>&1
	rc=$?
	t1=$(now_ns)
	wait "$srv"
	if [ "$rc" -ne 0 ] || ! perftest_completed "$tmpd/pt_cli.log" "$4" row; then
		sed 's/^/# /' "$tmpd/pt_cli.log" "$tmpd/pt_srv.log" >&2
		return 1
	fi
	echo $((t1 - t0))
}

# perftest's own figure of a completed run (the log of its client), as
# nanoseconds for its iterations in the form the table reads: from the
# bandwidth tools their "BW average" (MiB/s, the transfers alone, timed by
# the TSC), from ib_send_lat its average latency (half a round trip, so an
# iteration is twice it). Nothing when perftest had no clock rate to time
# by (it prints 0 or inf then).
perftest_own_ns() { # log size iterations
	awk -v size="$2" -v n="$3" '
		$1 == size && $2 == n && NF >= 5 {
			v = 0
			if (lat) v = n * 2 * ($6 + 0) * 1000
			else if ($4 + 0 > 0) v = n * size / (($4 + 0) * 1048576) * 1e9
			if (v > 0 && v < 1e15) printf "%.0f", v
			exit
		}
		/t_avg/ { lat = 1 }' "$1"
}

# perftest times itself with the TSC and the "cpu MHz" of /proc/cpuinfo. A
# guest that knows its TSC rate (bench.sh boots it with tsc_early_khz)
# reports it, and each tool runs once, N iterations, its own figure
# printed as a workload of the "perftest" path: write, read, send
# (bandwidth), send_lat. A guest whose "cpu MHz" is 0 gets 0 or inf from
# perftest: each tool runs instead with N and 3N iterations, timed from
# outside (by /proc/uptime, in 10 ms steps), the difference being 2N
# iterations without the set-up; a set-up that took seconds longer in the
# first run than in the second can leave no difference, or a negative
# one: the pair is run once more, and a second such pair is a failed row,
# not a figure.
perftest() { # ours|theirs tool size N
	t=${2#ib_}
	if perftest_once "$1" "$2" "$3" "$4" > /dev/null; then
		own=$(perftest_own_ns "$tmpd/pt_cli.log" "$3" "$4")
		if [ -n "$own" ]; then
			echo "# bench: $1 perftest ${t%_bw} $3 $4 $own"
			return 0
		fi
		echo "# perftest $2 on $1: no figure of its own (cpu MHz $(awk '/^cpu MHz/ { print $4; exit }' /proc/cpuinfo)); timed from outside"
	fi
	for _try in 1 2; do
		if ! a=$(perftest_once "$1" "$2" "$3" "$4") || ! b=$(perftest_once "$1" "$2" "$3" $((3 * $4))); then
			break
		fi
		if [ "$b" -gt "$a" ]; then
			echo "# bench: $1 perftest ${t%_bw} $3 $((2 * $4)) $((b - a))"
			return 0
		fi
		echo "# perftest $2 on $1: $((3 * $4)) iterations took no longer than $4; again"
	done
	# The table shows the row as failed (scripts/bench-table.awk).
	echo "# bench: $1 perftest ${t%_bw} $3 failed 1"
	return 1
}
perftest_all() { # ours|theirs
	ok=1
	for t in ib_write_bw ib_read_bw ib_send_bw; do
		perftest "$1" "$t" 65536 1000 || ok=0
	done
	perftest "$1" ib_send_lat 8 2000 || ok=0
	[ "$ok" = 1 ]
}

# Ours, before the kernel's stack is loaded: rdma_rs_uverbs serves
# unchanged libibverbs only while ib_core is absent (kept from autoloading
# meanwhile); it goes again before theirs() loads the C stack.
nocore=/etc/modprobe.d/rdma-rs-no-ib-core.conf
perftest_ours() {
	mkdir -p /etc/modprobe.d && printf 'install ib_core /bin/false\n' > "$nocore" || return 1
	modprobe rdma_rs_uverbs && perftest_all ours
	rc=$?
	rmmod rdma_rs_uverbs
	rm -f "$nocore"
	return "$rc"
}

# The whole benchmark once more under perf (CPU-clock samples of both
# vCPUs, 499 Hz): where the time goes, by module and by function.
profile() {
	perf record -q -a -g -F 499 -o "$tmpd/perf.data" -- modprobe rdma_rxe_bench > "$tmpd/perf.log" 2>&1 ||
		{ sed 's/^/# /' "$tmpd/perf.log"; return 1; }
	echo "# profile: samples by module"
	perf report -i "$tmpd/perf.data" --stdio --no-children --sort dso -g none 2>/dev/null |
		grep '%' | head -n 12 | sed 's/^/# profile: /'
	# Samples of a module loaded after perf started (this one) have no name.
	echo "# profile: [unknown] is rdma_rxe_bench, loaded at $(awk '$1 == "rdma_rxe_bench" { print $6 }' /proc/modules)"
	echo "# profile: hottest functions (self)"
	perf report -i "$tmpd/perf.data" --stdio --no-children --sort dso,sym -g none 2>/dev/null |
		grep '%' | head -n 40 | sed 's/^/# profile: /'
	# With interrupts off a sample waits for them to come back on, so the
	# time of every IRQ-off section lands on the unlock that ends it: the
	# callers of those unlocks say whose sections they are.
	echo "# profile: time including callees, by module and function"
	perf report -i "$tmpd/perf.data" --stdio --children --sort dso,sym -g none 2>/dev/null |
		grep '%' | grep -v 'kernel.kallsyms' | head -n 40 | sed 's/^/# profile: /'
	rmmod rdma_rxe_bench
}

# rdma_rs.bench=rxe, =rtrs or =perftest on the kernel command line (`make
# bench BENCH=...`) runs that part alone (rxe includes perftest); the
# others' cases are skipped.
part=all
read -r cmdline < /proc/cmdline
for arg in $cmdline; do
	case "$arg" in rdma_rs.bench=*) part=${arg#*=} ;; esac
done

ktap_plan
ktap_check "ours_on_veth" ours
if [ "$part" = rtrs ] || [ "$part" = rnbd ]; then
	ktap_skip "perftest_ours" "rdma_rs.bench=$part"
else
	# Not through ktap_check, which keeps what a passing step prints:
	# the "# bench:" lines go to the log.
	if perftest_ours; then ktap_pass "perftest_ours"; else ktap_fail "perftest_ours" "a run failed"; fi
fi
ktap_check "theirs_on_veth" theirs
if [ "$part" = rtrs ] || [ "$part" = perftest ] || [ "$part" = rnbd ]; then
	ktap_skip "rdma_rxe_bench" "rdma_rs.bench=$part"
	ktap_skip "profile" "rdma_rs.bench=$part"
	ktap_skip "crcspeed" "rdma_rs.bench=$part"
	ktap_skip "rdma_rxe_tm_bench" "rdma_rs.bench=$part"
else
	ktap_module rdma_rxe_bench
	dmesg | sed -n 's/^.*rdma_rxe_bench: bench: /# bench: /p'
	for d in rbo0 rbo1; do echo "# counters $d: $(tr '\n' ' ' < $cfs/$d/counters)"; done
	rmmod rdma_rxe_bench 2>/dev/null
	# What the ICRC's CRC-32 costs in this guest, by method, beside a copy
	# of the same bytes (selftests/tools/crcspeed.c): the table's line.
	if crcspeed > "$tmpd/crcspeed.out"; then
		sed 's/^/# /' "$tmpd/crcspeed.out"
		ktap_pass "crcspeed"
	else
		ktap_fail "crcspeed" "a method computed a wrong CRC"
	fi
	if command -v perf > /dev/null; then
		if profile; then ktap_pass "profile"; else ktap_fail "profile" "perf failed"; fi
	else
		ktap_skip "profile" "no perf in the guest"
	fi
	# Tagged messages beside plain SENDs, on ours alone.
	ktap_module rdma_rxe_tm_bench
	dmesg | sed -n 's/^.*rdma_rxe_tm_bench: bench: /# bench: /p'
	rmmod rdma_rxe_tm_bench 2>/dev/null
fi
if [ "$part" = rtrs ] || [ "$part" = rnbd ]; then
	ktap_skip "perftest_theirs" "rdma_rs.bench=$part"
else
	rmmod rxe_cpeer 2>/dev/null
	if perftest_all theirs; then ktap_pass "perftest_theirs"; else ktap_fail "perftest_theirs" "a run failed"; fi
fi

# RTRS: three rounds, each ours (always_invalidate Y, then N), then the
# kernel's with Y, then with N (rtrs-server.ko's parameter, so it is loaded
# again for each). Both servers: 128 chunks of 256 KiB (rtrs_bench.rs).
rtrs_theirs() { # Y|N
	modprobe rtrs-server always_invalidate="$1" sess_queue_depth=128 max_chunk_size=262144 &&
		modprobe rtrs-client && modprobe rtrs_cbench inval="$1"
	rc=$?
	rmmod rtrs_cbench 2>/dev/null
	rmmod rtrs_server 2>/dev/null
	return $rc
}
rtrs_ours() {
	modprobe rtrs_bench
	rc=$?
	rmmod rtrs_bench 2>/dev/null
	return $rc
}
# Packets both devices of a stack sent so far: ours (rbo0, rbo1), the
# kernel's (cbo0, cbo1).
rtrs_pkts() { # ours|theirs
	if [ "$1" = ours ]; then
		cat $cfs/rbo0/counters $cfs/rbo1/counters | awk '$1 == "tx_packets" { n += $2 } END { print n }'
	else
		cat /sys/class/infiniband/cbo0/ports/1/hw_counters/sent_pkts \
			/sys/class/infiniband/cbo1/ports/1/hw_counters/sent_pkts | awk '{ n += $1 } END { print n }'
	fi
}

rtrs_rounds() {
	for r in 1 2 3; do
		dmesg -c > /dev/null
		o0=$(rtrs_pkts ours) t0=$(rtrs_pkts theirs)
		rtrs_ours && o1=$(rtrs_pkts ours) && rtrs_theirs Y && rtrs_theirs N
		rc=$?
		# Both ran the same requests (Y and N): the packets they took.
		[ $rc -eq 0 ] && echo "# rtrs packets, round $r: ours $((o1 - o0)), the kernel's $(($(rtrs_pkts theirs) - t0))"
		dmesg | sed -n 's/^.*\(bench: \(ours\|theirs\) rtrs-\)/# \1/p'
		[ $rc -eq 0 ] || { dmesg | grep -E 'rtrs|RTRS' | tail -n 20 | sed 's/^/# /'; return 1; }
	done
}
# The RTRS loads once more under perf, as profile() does for rxe: where
# their time goes, by module and by function ("# rtrs profile: " lines for
# ours, "# rtrs C profile: " for the kernel's with always_invalidate=Y).
rtrs_report() { # perf.data prefix
	echo "# $2: samples by module"
	perf report -i "$1" --stdio --no-children --sort dso -g none 2>/dev/null |
		grep '%' | head -n 12 | sed "s/^/# $2: /"
	echo "# $2: hottest functions (self)"
	perf report -i "$1" --stdio --no-children --sort dso,sym -g none 2>/dev/null |
		grep '%' | head -n 40 | sed "s/^/# $2: /"
	echo "# $2: time including callees, by module and function"
	perf report -i "$1" --stdio --children --sort dso,sym -g none 2>/dev/null |
		grep '%' | grep -v 'kernel.kallsyms' | head -n 50 | sed "s/^/# $2: /"
}
rtrs_profile() {
	perf record -q -a -g -F 499 -o "$tmpd/rperf.data" -- modprobe rtrs_bench > "$tmpd/rperf.log" 2>&1 ||
		{ sed 's/^/# /' "$tmpd/rperf.log"; return 1; }
	rmmod rtrs_bench
	rtrs_report "$tmpd/rperf.data" "rtrs profile"
	modprobe rtrs-server always_invalidate=Y sess_queue_depth=128 max_chunk_size=262144 &&
		modprobe rtrs-client || return 1
	perf record -q -a -g -F 499 -o "$tmpd/cperf.data" -- modprobe rtrs_cbench inval=Y > "$tmpd/cperf.log" 2>&1 ||
		{ sed 's/^/# /' "$tmpd/cperf.log"; return 1; }
	rmmod rtrs_cbench rtrs_server
	rtrs_report "$tmpd/cperf.data" "rtrs C profile"
}

# RNBD: a RAM disk of 64 MiB exported and mapped on each stack, ours
# (rdma_rs_rnbd_server in bna on rbo0, rdma_rs_rnbd_client in bnb on
# rbo1, over our RTRS) and the kernel's (rnbd_server and rnbd_client over
# its RTRS, cbo1 to cbo0). Both RTRS servers: always_invalidate, 128
# chunks of 256 KiB (a 128 KiB request is not split).
orc=/sys/class/rdma_rs_rnbd_client/ctl
rnbd_setup() {
	modprobe brd rd_nr=2 rd_size=65536 || return 1
	rmmod rtrs_bench rdma_rs_rtrs 2>/dev/null
	modprobe rdma_rs_rtrs always_invalidate=Y sess_queue_depth=128 max_chunk_size=262144 &&
		ip netns exec bna modprobe rdma_rs_rnbd_server dev_search_path=/dev &&
		modprobe rdma_rs_rnbd_client &&
		ip netns exec bnb sh -c "echo 'sessname=bo path=ip:10.83.0.2@ip:10.83.0.1 device_path=ram1' > $orc/map_device" &&
		d=$(readlink "$orc/devices/ram1@bo/block") && echo "${d##*/}" > "$tmpd/ours_dev" || return 1
	modprobe rtrs-server always_invalidate=Y sess_queue_depth=128 max_chunk_size=262144 &&
		modprobe rnbd_server && modprobe rnbd_client &&
		echo "sessname=bc path=ip:10.84.0.2@ip:10.84.0.1 device_path=/dev/ram0" > /sys/class/rnbd-client/ctl/map_device &&
		rnbd_of bc > "$tmpd/theirs_dev" || return 1
	for s in ours theirs; do
		d=$(cat "$tmpd/${s}_dev")
		echo "# rnbd: $s on /dev/$d, $(cat "/sys/block/$d/size") sectors, max $(cat "/sys/block/$d/queue/max_sectors_kb") KiB a request"
		[ "$(cat "/sys/block/$d/size")" = 131072 ] || return 1
	done
}
# One run of blkload on STACK's disk: the "# bench:" line, or a failed one.
rnbd_run() { # ours|theirs TEST BS QD
	d=$(cat "$tmpd/$1_dev")
	if r=$(blkload "/dev/$d" "$2" "$3" "$4" 2 64 2> "$tmpd/blkload.err"); then
		echo "# bench: $1 rnbd $2-qd$4 $3 $r"
	else
		sed 's/^/# /' "$tmpd/blkload.err"
		echo "# bench: $1 rnbd $2-qd$4 $3 failed 1"
		return 1
	fi
}
# Three rounds, the stacks taking turns on each load. The sequential
# write comes first: it fills the span the others read and write (brd
# reads a page never written as zeroes, without touching memory).
rnbd_rounds() {
	ok=1
	for r in 1 2 3; do
		for load in "seqwrite 131072 16" "seqread 131072 16" "randwrite 4096 1" "randread 4096 1" \
			"randwrite 4096 64" "randread 4096 64"; do
			for s in ours theirs; do
				# shellcheck disable=SC2086 # the load is three words
				rnbd_run "$s" $load || ok=0
			done
		done
	done
	[ "$ok" = 1 ]
}
rnbd_teardown() {
	echo normal > "$orc/devices/ram1@bo/unmap_device" &&
		rnbd_unmap "$(cat "$tmpd/theirs_dev")" bc &&
		rmmod rdma_rs_rnbd_client rdma_rs_rnbd_server rnbd_client rnbd_server rtrs_server &&
		rmmod brd
}

if [ "$part" = rxe ] || [ "$part" = perftest ] || [ "$part" = rnbd ]; then
	ktap_skip "rtrs" "rdma_rs.bench=$part"
	ktap_skip "rtrs_profile" "rdma_rs.bench=$part"
else
	if rtrs_rounds; then ktap_pass "rtrs"; else ktap_fail "rtrs" "a round failed"; fi
	if ! command -v perf > /dev/null; then
		ktap_skip "rtrs_profile" "no perf in the guest"
	elif rtrs_profile; then
		ktap_pass "rtrs_profile"
	else
		ktap_fail "rtrs_profile" "perf failed"
	fi
fi
if [ "$part" = all ] || [ "$part" = rnbd ]; then
	ktap_check "rnbd_setup" rnbd_setup
	if rnbd_rounds; then ktap_pass "rnbd"; else ktap_fail "rnbd" "a run failed"; fi
	ktap_check "rnbd_teardown" rnbd_teardown
else
	ktap_skip "rnbd_setup" "rdma_rs.bench=$part"
	ktap_skip "rnbd" "rdma_rs.bench=$part"
	ktap_skip "rnbd_teardown" "rdma_rs.bench=$part"
fi
ktap_check "teardown" sh -c "echo 0 > $cfs/rbo0/enable && echo 0 > $cfs/rbo1/enable &&
	rmdir $cfs/rbo0 $cfs/rbo1 && ip netns del bna && ip netns del bnb &&
	rdma link delete cbo0 && rdma link delete cbo1 && ip link del bc0"
ktap_finish
