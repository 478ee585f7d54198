#!/bin/sh
# The kernel's RNBD client on the kernel's RTRS client maps a device from
# an RNBD server of ours on our RTRS server (rtrs_rnbd_srv_test.ko over a
# RAM disk, on our rxe in namespace rt_b): dd writes a pattern through
# /dev/rnbd0 and reads it back, both direct, and the bytes must match;
# the client's heartbeats are acknowledged; our server is unloaded under
# the mapped device and loaded again, and the client reconnects and works;
# then the device is unmapped and everything unloads.
#
# First, rdma_rs_rtrs's module parameters: bad values refuse the load as
# the kernel's server refuses them; good ones show in /sys/module, and a
# server opened with Server::open (port 1236 of rtrs_rnbd_srv_test)
# announces them to the kernel's client, which maps a second device from
# it. Our server's sysfs (/sys/class/rdma_rs_rtrs_server, the kernel's
# rtrs-server layout) shows both sessions, counts their IO, takes a
# reset, and disconnects a path.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh
. ../lib/rnbd.sh

ctl=/sys/class/rnbd-client/ctl
mparams=/sys/module/rdma_rs_rtrs/parameters
srv=/sys/class/rdma_rs_rtrs_server
# The kernel client's path, as our server names it: its address @ ours.
sp=$srv/rdma_rs_rnbd/paths/ip:10.80.1.1@ip:10.80.1.2
pp=$srv/rdma_rs_params/paths/ip:10.80.1.1@ip:10.80.1.2

# Bad parameters: the load fails with EINVAL and the log says why.
params_refused() {
	if [ -d /sys/module/rdma_rs_rtrs ]; then rmmod rdma_rs_rtrs || return 1; fi
	while IFS='|' read -r args why; do
		dmesg -c > /dev/null
		# shellcheck disable=SC2086 # the parameters, one a word
		if modprobe rdma_rs_rtrs $args 2> "$tmpd/err"; then
			echo "loaded with $args"
			rmmod rdma_rs_rtrs
			return 1
		fi
		grep -q "Invalid argument" "$tmpd/err" || { echo "$args: $(cat "$tmpd/err")"; return 1; }
		if ! dmesg | grep -q "rtrs: $why refused" ||
			! dmesg | grep -q "rtrs: not loaded: invalid module parameters (errno -22)"; then
			echo "$args: no reason logged"
			dmesg | tail -n 5
			return 1
		fi
		[ ! -d /sys/module/rdma_rs_rtrs ] || return 1
	done <<-EOF
	sess_queue_depth=0|sess_queue_depth=0
	sess_queue_depth=-1|sess_queue_depth=-1
	sess_queue_depth=65536|sess_queue_depth=65536
	max_chunk_size=5000|max_chunk_size=5000
	max_chunk_size=12288|max_chunk_size=12288
	sess_queue_depth=65535 max_chunk_size=131072|sess_queue_depth=65535 with max_chunk_size=131072
	EOF
}

# Good ones load and show; setup's servers then run with them.
params_shown() {
	modprobe rdma_rs_rtrs sess_queue_depth=32 max_chunk_size=65536 always_invalidate=N ||
		return 1
	if [ "$(cat "$mparams/sess_queue_depth")" != 32 ] ||
		[ "$(cat "$mparams/max_chunk_size")" != 65536 ] ||
		[ "$(cat "$mparams/always_invalidate")" != N ]; then
		grep . "$mparams"/*
		return 1
	fi
}

setup() {
	modprobe rdma_rxe && modprobe rdma_rs_rxe && modprobe rdma_cm && modprobe rnbd_client &&
		netns_add rt_b && netns_veth - rtv0 rt_b rtv1 &&
		netns_addr - rtv0 10.80.1.1/24 && netns_addr rt_b rtv1 10.80.1.2/24 &&
		c_rxe_add rtxa rtv0 && rxe_bind rt_b rtv1 rtb &&
		ping -c 1 -W 5 10.80.1.2 > /dev/null && modprobe rtrs_rnbd_srv_test
}

# What both sides' connection managers saw, when the map fails.
cm_state() {
	p=/sys/class/rdma_rs/rtb/ports/1
	for f in cm_rx_msgs/req cm_rx_duplicates/req cm_tx_msgs/rep cm_tx_msgs/rej cm_rx_msgs/rtu; do
		echo "rtb $f: $(cat "$p/$f")"
	done
	dmesg | grep -E "rtrs|rnbd" | tail -20
}

map() {
	if echo "sessname=rdma_rs_rnbd path=ip:10.80.1.2 device_path=ours" > "$ctl/map_device" &&
		[ -b /dev/rnbd0 ]; then
		# The session's UUID and connection count, for the intruders.
		dmesg | sed -n 's/^.*rtrs: path "rdma_rs_rnbd" up: \([0-9]*\) connections, session \([0-9a-f]*\)$/\2 \1/p' |
			tail -n 1 > "$tmpd/victim"
		[ -s "$tmpd/victim" ] || { echo "no session UUID logged"; return 1; }
		return 0
	fi
	cm_state
	return 1
}

data_roundtrip() {
	[ -b /dev/rnbd0 ] || { echo "no /dev/rnbd0"; return 1; }
	dd if=/dev/urandom of="$tmpd/pattern" bs=4096 count=256 2> /dev/null &&
		dd if="$tmpd/pattern" of=/dev/rnbd0 bs=4096 count=256 oflag=direct 2> /dev/null &&
		dd if=/dev/rnbd0 of="$tmpd/back" bs=4096 count=256 iflag=direct 2> /dev/null &&
		cmp "$tmpd/pattern" "$tmpd/back" &&
		dd if="$tmpd/pattern" of=/dev/rnbd0 bs=65536 count=4 seek=64 oflag=direct 2> /dev/null &&
		dd if=/dev/rnbd0 of="$tmpd/back2" bs=65536 count=4 skip=64 iflag=direct 2> /dev/null &&
		head -c 262144 "$tmpd/pattern" | cmp - "$tmpd/back2" || return 1
	# Many more reads than the queue depth (16 times its 32): each is answered with the data,
	# a SEND with invalidate of the client's key and the response, and the
	# client's receives and keys must keep up.
	dd if=/dev/rnbd0 of=/dev/null bs=4096 count=512 iflag=direct 2> /dev/null || return 1
	if dmesg | grep -E "RDMA failed|Failed IB_WR|rtrs_post_recv_empty|I/O failed"; then
		return 1
	fi
}

# The server of port 1236 (Server::open) announces the module's
# parameters: its log says so, and the kernel's client, mapping a device
# from it, sees the queue depth (its tags) and the largest IO (64 KiB
# chunks less 4 KiB of headers: 60 KiB). IO works on it; our sysfs shows
# its session, and a disconnect there closes the path, the session's last:
# both directories go. Then the device is unmapped.
params_announced() {
	dmesg | grep -q "rtrs: listening on port 1236: 32 chunks of 65536 bytes, always_invalidate N" ||
		{ dmesg | grep "listening on port"; return 1; }
	echo "dest_port=1236 sessname=rdma_rs_params path=ip:10.80.1.2 device_path=params" \
		> "$ctl/map_device" || { cm_state; return 1; }
	d=$(rnbd_of rdma_rs_params) || { echo "no device of session rdma_rs_params"; return 1; }
	echo "# $d"
	if [ "$(cat "/sys/block/$d/mq/0/nr_tags")" != 32 ] ||
		[ "$(cat "/sys/block/$d/queue/max_hw_sectors_kb")" != 60 ]; then
		grep . "/sys/block/$d/mq/0/nr_tags" "/sys/block/$d/queue/max_hw_sectors_kb"
		return 1
	fi
	# At 8 MiB: the server's RAM disk is the first device's too, whose
	# first MiB and the 256 KiB at 4 MiB hold what later cases read back.
	dd if=/dev/urandom of="$tmpd/ppattern" bs=4096 count=64 2> /dev/null &&
		dd if="$tmpd/ppattern" of="/dev/$d" bs=4096 count=64 seek=2048 oflag=direct 2> /dev/null &&
		dd if="/dev/$d" of="$tmpd/pback" bs=4096 count=64 skip=2048 iflag=direct 2> /dev/null &&
		cmp "$tmpd/ppattern" "$tmpd/pback" || return 1
	[ -d "$pp" ] || { ls -R "$srv"; return 1; }
	[ "$(cat "$pp/hca_name")" = rtb ] || return 1
	read -r r _ w _ < "$pp/stats/rdma" || return 1
	if [ "$r" -lt 64 ] || [ "$w" -lt 64 ]; then
		echo "rdma: $(cat "$pp/stats/rdma")"
		return 1
	fi
	dmesg -c > /dev/null
	echo 1 > "$pp/disconnect" &&
		gone "$srv/rdma_rs_params" &&
		dmesg | grep -q 'rtrs: path "rdma_rs_params" from ip:10.80.1.1: disconnect requested' &&
		dmesg | grep -q 'rtrs: path "rdma_rs_params" closed' || return 1
	# The kernel client's other session is untouched.
	[ -d "$sp" ] || return 1
	rnbd_unmap "$d" rdma_rs_params && gone "$srv/rdma_rs_params"
}

# Our server's sysfs for the kernel client's session: one path named
# <its address>@<ours>, the device and port it came on, both addresses,
# requests and bytes counted each way (a request's bytes: its data and its
# RNBD message), 1 resets the counters and 0 is refused.
server_sysfs() {
	[ -d "$sp" ] || { ls -R "$srv"; return 1; }
	set -- "$srv/rdma_rs_rnbd/paths"/*
	[ $# -eq 1 ] || { echo "paths: $*"; return 1; }
	if [ "$(cat "$sp/hca_name")" != rtb ] || [ "$(cat "$sp/hca_port")" != 1 ] ||
		[ "$(cat "$sp/src_addr")" != ip:10.80.1.1 ] ||
		[ "$(cat "$sp/dst_addr")" != ip:10.80.1.2 ] ||
		[ "$(cat "$sp/disconnect")" != "Usage: echo 1 > disconnect" ]; then
		grep . "$sp"/*
		return 1
	fi
	read -r r0 rb0 w0 wb0 < "$sp/stats/rdma" &&
		dd if="$tmpd/pattern" of=/dev/rnbd0 bs=4096 count=16 oflag=direct 2> /dev/null &&
		dd if=/dev/rnbd0 of=/dev/null bs=4096 count=16 iflag=direct 2> /dev/null &&
		read -r r1 rb1 w1 wb1 < "$sp/stats/rdma" || return 1
	echo "# rdma: $r0 $rb0 $w0 $wb0, then $r1 $rb1 $w1 $wb1"
	[ "$r1" -ge $((r0 + 16)) ] && [ "$w1" -ge $((w0 + 16)) ] &&
		[ "$rb1" -ge $((rb0 + 16 * 4096)) ] && [ "$wb1" -ge $((wb0 + 16 * 4096)) ] || return 1
	if echo 0 > "$sp/stats/rdma" 2> /dev/null; then echo "0 taken"; return 1; fi
	echo 1 > "$sp/stats/rdma" && read -r r2 _ w2 _ < "$sp/stats/rdma" &&
		[ "$r2" -lt "$r1" ] && [ "$w2" -lt "$w1" ]
}

# The client's heartbeats (every 5 s on cid 0) are acknowledged: without
# that, it fails the path after 30 s.
heartbeat_acked() {
	for _ in $(seq 150); do
		dmesg | grep -q 'path "rdma_rs_rnbd": first heartbeat acknowledged' && return 0
		sleep 0.1
	done
	echo "no heartbeat acknowledged in 15 s"
	return 1
}

# Our server module unloaded under the mapped device: its paths close
# (our side disconnects); loaded again, the kernel's client reconnects on
# its own (after its 30 s reconnect delay), opens the device again, and IO
# works (the new server's RAM disk is empty: what is written now is read
# back).
server_reloaded() {
	rmmod rtrs_rnbd_srv_test || return 1
	dmesg -c > /dev/null
	modprobe rtrs_rnbd_srv_test || return 1
	for _ in $(seq 900); do
		dmesg | grep -q 'rnbd srv: open "ours"' && break
		sleep 0.1
	done
	dmesg | grep -q 'rnbd srv: open "ours"' || { echo "no reopen in 90 s"; cm_state; return 1; }
	dd if="$tmpd/pattern" of=/dev/rnbd0 bs=65536 count=2 oflag=direct 2> /dev/null &&
		dd if=/dev/rnbd0 of="$tmpd/back3" bs=65536 count=2 iflag=direct 2> /dev/null &&
		head -c 131072 "$tmpd/pattern" | cmp - "$tmpd/back3" &&
		[ -d "$sp" ]
}

# Lying clients (rtrs_liar_test.ko, from our rxe rtc in namespace rt_c to
# the server's 10.80.2.2 on our rxe rtd), and a silent one: the server
# closes each such path, and the kernel client's device is still served.
# Intruders send connection requests for the kernel client's live session
# (its UUID from our server's log) while IO runs on it: they are refused,
# and the IO goes on, every byte right, without a reconnect.
liars_setup() {
	netns_add rt_c && netns_veth rt_c rtv2 rt_b rtv3 &&
		netns_addr rt_c rtv2 10.80.2.1/24 && netns_addr rt_b rtv3 10.80.2.2/24 &&
		rxe_bind rt_c rtv2 rtc && rxe_bind rt_b rtv3 rtd &&
		ip netns exec rt_c ping -c 1 -W 5 10.80.2.2 > /dev/null
}

# Writes and reads back 256 KiB at 12 MiB of /dev/rnbd0 until $tmpd/stop
# shows; counts the rounds in $tmpd/io_n, a mismatch or failure in
# $tmpd/io_bad.
io_loop() {
	n=0
	dd if=/dev/urandom of="$tmpd/iopat" bs=65536 count=4 2> /dev/null
	while [ ! -e "$tmpd/stop" ]; do
		if ! dd if="$tmpd/iopat" of=/dev/rnbd0 bs=65536 count=4 seek=192 oflag=direct 2> /dev/null ||
			! dd if=/dev/rnbd0 of="$tmpd/ioback" bs=65536 count=4 skip=192 iflag=direct 2> /dev/null ||
			! cmp -s "$tmpd/iopat" "$tmpd/ioback"; then
			echo "round $n" > "$tmpd/io_bad"
			break
		fi
		n=$((n + 1))
		echo "$n" > "$tmpd/io_n"
	done
}

# The kernel client's reconnects (successful and failed) on its path.
reconnects() {
	cat /sys/class/rtrs-client/rdma_rs_rnbd/paths/*/stats/reconnects
}

liars() {
	read -r vuuid vcons < "$tmpd/victim" || { ktap_fail rtrs_liar_test "no victim"; return; }
	rc0=$(reconnects)
	rm -f "$tmpd/stop" "$tmpd/io_bad" "$tmpd/io_n"
	io_loop &
	iopid=$!
	ktap_module rtrs_liar_test victim_uuid="$vuuid" victim_cid_num="$vcons"
	touch "$tmpd/stop"
	wait "$iopid"
	rc1=$(reconnects)
	if [ -e "$tmpd/io_bad" ] || [ ! -s "$tmpd/io_n" ] || [ "$rc0" != "$rc1" ]; then
		echo "# io: $(cat "$tmpd/io_n" 2> /dev/null) rounds, bad: $(cat "$tmpd/io_bad" 2> /dev/null)"
		echo "# reconnects: $rc0, then $rc1"
		ktap_fail live_session_untouched
	else
		echo "# io: $(cat "$tmpd/io_n") rounds right; reconnects $rc1"
		ktap_pass live_session_untouched
	fi
}

still_served() {
	dd if=/dev/rnbd0 of="$tmpd/back4" bs=65536 count=2 iflag=direct 2> /dev/null &&
		head -c 131072 "$tmpd/pattern" | cmp - "$tmpd/back4" &&
		dmesg | grep -q 'rtrs: path "liar" closed: a bad RecvRdmaWithImm (errno -22)' &&
		dmesg | grep -q 'rtrs: path "liar" closed: RdmaWrite completed with RemAccessErr' &&
		dmesg | grep -q 'rtrs: path "liar" closed: heartbeats unanswered'
}

unmap() {
	rnbd_unmap rnbd0 rdma_rs_rnbd
}

teardown() {
	rmmod rnbd_client rtrs_client 2>/dev/null
	rmmod rtrs_liar_test 2>/dev/null
	rmmod rtrs_rnbd_srv_test rdma_rs_rtrs && [ ! -e "$srv" ] && rdma link delete rtxa &&
		rxe_item_remove rtb rtc rtd && ip netns del rt_b && ip netns del rt_c
}

ktap_plan
ktap_check params_refused params_refused
ktap_check params_shown params_shown
ktap_check setup setup
ktap_check map map
ktap_check data_roundtrip data_roundtrip
ktap_check server_sysfs server_sysfs
ktap_check heartbeat_acked heartbeat_acked
ktap_check params_announced params_announced
ktap_check liars_setup liars_setup
liars
ktap_check still_served still_served
ktap_check server_reloaded server_reloaded
ktap_check unmap unmap
ktap_check teardown teardown
cleanup_run
ktap_finish
