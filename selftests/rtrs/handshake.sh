#!/bin/sh
# Our RTRS wire codec (rtrs/proto) against the kernel's RTRS: the kernel's
# rnbd_client maps a device from an address where a listener of ours (our
# rdma_cm on our rxe) waits; the kernel's RTRS client's conn_req is parsed
# by our codec and refused with our conn_rsp, whose errno the kernel's
# client reports (rtrs_handshake_test.rs says more).
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

setup() {
	modprobe rdma_rxe && modprobe rdma_rs_rxe && modprobe rdma_cm && modprobe rnbd_client &&
		netns_add rt_b && netns_veth - rtv0 rt_b rtv1 &&
		netns_addr - rtv0 10.80.1.1/24 && netns_addr rt_b rtv1 10.80.1.2/24 &&
		c_rxe_add rtxa rtv0 && rxe_bind rt_b rtv1 rtb &&
		ping -c 1 -W 5 10.80.1.2 > /dev/null
}

# The kernel client maps a device once our listener is up; its attempt
# fails (we refuse it), with our errno in its log.
map_when_listening() {
	for _ in $(seq 600); do
		dmesg | grep -q "rtrs handshake: listening on 1234" && break
		sleep 0.1
	done
	_rc=0
	echo "sessname=rdma_rs_hs path=ip:10.80.1.2 device_path=/dev/ram0" \
		> /sys/class/rnbd-client/ctl/map_device 2> /dev/null || _rc=1
	echo "$_rc" > "$tmpd/map_rc"
}

kernel_saw_our_errno() {
	[ "$(cat "$tmpd/map_rc")" != 0 ] || { echo "map_device succeeded"; return 1; }
	dmesg | grep -q "Connect rejected: status 28 (consumer defined), rtrs errno -13" ||
		{ dmesg | grep -i rtrs | tail -5; return 1; }
}

teardown() {
	rmmod rtrs_handshake_test rnbd_client rtrs_client 2>/dev/null
	rdma link delete rtxa && rxe_item_remove rtb && ip netns del rt_b
}

ktap_plan
ktap_check setup setup
dmesg -c > /dev/null
map_when_listening &
mapper=$!
ktap_module rtrs_handshake_test
wait "$mapper"
ktap_check kernel_saw_our_errno kernel_saw_our_errno
ktap_check teardown teardown
cleanup_run
ktap_finish
