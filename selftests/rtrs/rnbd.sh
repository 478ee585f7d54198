#!/bin/sh
# The kernel's RNBD client on the kernel's RTRS client maps a device from
# an RNBD server of ours on our RTRS server (rtrs_rnbd_srv_test.ko over a
# RAM disk, on our rxe in namespace rt_b): dd writes a pattern through
# /dev/rnbd0 and reads it back, both direct, and the bytes must match;
# the client's heartbeats are acknowledged; our server is unloaded under
# the mapped device and loaded again, and the client reconnects and works;
# then the device is unmapped and everything unloads.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

ctl=/sys/class/rnbd-client/ctl

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
	# Many more reads than the queue depth: each is answered with the data,
	# a SEND with invalidate of the client's key and the response, and the
	# client's receives and keys must keep up.
	dd if=/dev/rnbd0 of=/dev/null bs=4096 count=2048 iflag=direct 2> /dev/null || return 1
	if dmesg | grep -E "RDMA failed|Failed IB_WR|rtrs_post_recv_empty|I/O failed"; then
		return 1
	fi
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
		head -c 131072 "$tmpd/pattern" | cmp - "$tmpd/back3"
}

# Lying clients (rtrs_liar_test.ko, from our rxe rtc in namespace rt_c to
# the server's 10.80.2.2 on our rxe rtd), and a silent one: the server
# closes each such path, and the kernel client's device is still served.
liars_setup() {
	netns_add rt_c && netns_veth rt_c rtv2 rt_b rtv3 &&
		netns_addr rt_c rtv2 10.80.2.1/24 && netns_addr rt_b rtv3 10.80.2.2/24 &&
		rxe_bind rt_c rtv2 rtc && rxe_bind rt_b rtv3 rtd &&
		ip netns exec rt_c ping -c 1 -W 5 10.80.2.2 > /dev/null
}

still_served() {
	dd if=/dev/rnbd0 of="$tmpd/back4" bs=65536 count=2 iflag=direct 2> /dev/null &&
		head -c 131072 "$tmpd/pattern" | cmp - "$tmpd/back4" &&
		dmesg | grep -q 'rtrs: path "liar" closed: a bad RecvRdmaWithImm (errno -22)' &&
		dmesg | grep -q 'rtrs: path "liar" closed: RdmaWrite completed with RemAccessErr' &&
		dmesg | grep -q 'rtrs: path "liar" closed: heartbeats unanswered'
}

unmap() {
	echo normal > /sys/block/rnbd0/rnbd/unmap_device && [ ! -b /dev/rnbd0 ]
}

teardown() {
	rmmod rnbd_client rtrs_client 2>/dev/null
	rmmod rtrs_liar_test 2>/dev/null
	rmmod rtrs_rnbd_srv_test rdma_rs_rtrs && rdma link delete rtxa &&
		rxe_item_remove rtb rtc rtd && ip netns del rt_b && ip netns del rt_c
}

ktap_plan
ktap_check setup setup
ktap_check map map
ktap_check data_roundtrip data_roundtrip
ktap_check heartbeat_acked heartbeat_acked
ktap_check liars_setup liars_setup
ktap_module rtrs_liar_test
ktap_check still_served still_served
ktap_check server_reloaded server_reloaded
ktap_check unmap unmap
ktap_check teardown teardown
cleanup_run
ktap_finish
