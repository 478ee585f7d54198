#!/bin/sh
# Our RTRS client against the kernel's RTRS server: the kernel's
# rnbd_server exports a RAM disk (brd, /dev/ram0, 32 MiB) over the kernel's
# rdma_rxe (rtxs on rtv4, 10.80.3.1, initial namespace); the test ULP
# rtrs_rnbd_clt_test.ko speaks RNBD to it through our RTRS client on our
# rxe rte (rtv5, 10.80.3.2, namespace rt_e), and writes and reads patterns
# at many offsets and sizes. What it wrote is then read from /dev/ram0
# directly, and it reads what this script wrote there. The kernel server's
# sysfs shows the session and its IO while it is open, and not after. All
# of it with the server's always_invalidate=Y (the default: a new rkey
# after every request) and again with N.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

srv=/sys/class/rtrs-server/rdma_rs_clt

# 16-byte lines "%015x\n" of N numbers from FIRST.
lines() {
	awk -v f="$1" -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%015x\n", f + i }'
}

server_load() {
	modprobe rtrs_server "$@" && modprobe rnbd_server
}

server_unload() {
	rmmod rnbd_server && rmmod rtrs_server
}

setup() {
	modprobe rdma_rxe && modprobe rdma_rs_rxe && modprobe rdma_cm &&
		modprobe brd rd_nr=1 rd_size=32768 && [ -b /dev/ram0 ] &&
		server_load &&
		netns_add rt_e && netns_veth - rtv4 rt_e rtv5 &&
		netns_addr - rtv4 10.80.3.1/24 && netns_addr rt_e rtv5 10.80.3.2/24 &&
		c_rxe_add rtxs rtv4 && rxe_bind rt_e rtv5 rte &&
		ip netns exec rt_e ping -c 1 -W 5 10.80.3.1 > /dev/null || return 1
	# The lines the module reads at 8 MiB (0x5000 onwards, 64 KiB).
	lines 20480 4096 > "$tmpd/theirs" &&
		dd if="$tmpd/theirs" of=/dev/ram0 bs=4096 seek=2048 oflag=direct 2> /dev/null
}

# The session is on the kernel server, with its reads and writes counted.
server_saw_session() {
	[ -d "$srv" ] || { echo "no $srv"; ls /sys/class/rtrs-server; return 1; }
	for p in "$srv"/paths/*; do
		read -r rd _ wr _ < "$p/stats/rdma" || return 1
		echo "# server path $(basename "$p"): $rd reads, $wr writes"
		[ "$rd" -gt 256 ] && [ "$wr" -gt 256 ] && return 0
	done
	echo "no path with the IO counted"
	return 1
}

# What the module wrote at 4 MiB is on the RAM disk itself.
ram_has_our_lines() {
	lines 0 4096 > "$tmpd/ours" &&
		dd if=/dev/ram0 of="$tmpd/back" bs=4096 skip=1024 count=16 iflag=direct 2> /dev/null &&
		cmp "$tmpd/ours" "$tmpd/back"
}

invalidate_y() {
	dmesg | grep -q "rtrs clt test: queue depth 512, max IO 126976, always invalidate: yes"
}

# Unloading the module closes the session: the server forgets it.
session_closes() {
	rmmod rtrs_rnbd_clt_test || return 1
	for _ in $(seq 100); do
		[ -d "$srv" ] || return 0
		sleep 0.1
	done
	echo "the server still has the session"
	return 1
}

# The same with always_invalidate=N: one rkey for all the chunks.
invalidate_n() {
	server_unload && server_load always_invalidate=N || return 1
	dmesg -c > /dev/null
	if ! modprobe rtrs_rnbd_clt_test; then
		dmesg | grep -E "ktap|rtrs|rnbd" | tail -30
		return 1
	fi
	dmesg | grep -q "rtrs clt test: queue depth 512, max IO 126976, always invalidate: no" &&
		! dmesg | grep -q "ktap: not ok" && server_saw_session && ram_has_our_lines &&
		session_closes
}

teardown() {
	rmmod rtrs_rnbd_clt_test 2>/dev/null
	server_unload && rmmod brd && rdma link delete rtxs && rxe_item_remove rte &&
		ip netns del rt_e && rmmod rdma_rs_rtrs
}

ktap_plan
ktap_check setup setup
ktap_module rtrs_rnbd_clt_test
ktap_check invalidate_y invalidate_y
ktap_check server_saw_session server_saw_session
ktap_check ram_has_our_lines ram_has_our_lines
ktap_check session_closes session_closes
ktap_check invalidate_n invalidate_n
ktap_check teardown teardown
cleanup_run
ktap_finish
