#!/bin/sh
# Connections made by our rdma_cm between the two guests, over the virtual
# link: guest 0 has our rxe rxm on eth0 (10.77.9.1); guest 1 has the
# kernel's rxe on eth0 (10.77.9.2) with rdma-core's `rping -s` listening.
# Each has our rxe rxv on VLAN 7 of eth0 in namespace mhv (10.77.10.1 and
# 10.77.10.2). modules/rdma_rxe_multihost_test.rs (selftests/rxe) runs our
# rping client in guest 0 against the kernel's rxe and against our server
# in guest 1, five verified iterations each.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

ktap_plan
if [ -z "$RDMA_RS_GUEST" ] || ! ip link show eth0 > /dev/null 2>&1; then
	ktap_skip "setup" "not a joined test guest"
	ktap_skip "rdma_rxe_multihost_test" "not a joined test guest"
	ktap_skip "kernel_rping_served" "not a joined test guest"
	ktap_skip "teardown" "not a joined test guest"
	ktap_finish
fi
me=$((RDMA_RS_GUEST + 1))

setup() {
	ip addr show dev eth0 | grep -q "10.77.9.$me/" || ip addr add "10.77.9.$me/24" dev eth0 || return 1
	ip link set eth0 up && modprobe rdma_rs_rxe &&
		ip link add link eth0 name eth0.7 type vlan id 7 && netns_add mhv &&
		ip link set eth0.7 netns mhv && netns_addr mhv eth0.7 "10.77.10.$me/24" &&
		rxe_bind mhv eth0.7 rxv || return 1
	if [ "$RDMA_RS_GUEST" = 0 ]; then
		rxe_item_new rxm && echo eth0 > "$rxe_cfs/rxm/netdev" && echo 1 > "$rxe_cfs/rxm/enable"
	else
		modprobe rdma_rxe && modprobe rdma_cm && modprobe rdma_ucm && c_rxe_add cxm eth0 || return 1
		(
			rping -s -a 10.77.9.2 -p 7175 -S 100 -v > "$tmpd/rping_s.out" 2>&1
			echo $? > "$tmpd/rping_s.rc"
		) &
		cleanup_add kill "$!"
	fi
}

# Guest 1: rping -s served our client's five iterations and ended well.
kernel_rping_served() {
	[ "$RDMA_RS_GUEST" = 0 ] && return 0
	for _ in $(seq 300); do
		[ -f "$tmpd/rping_s.rc" ] && break
		sleep 0.1
	done
	_n=$(grep -c '^server ping data: rdma-ping-' "$tmpd/rping_s.out")
	if [ "$(cat "$tmpd/rping_s.rc" 2>/dev/null)" != 0 ] || [ "$_n" != 5 ]; then
		sed 's/^/rping -s: /' "$tmpd/rping_s.out"
		return 1
	fi
}

teardown() {
	rmmod rdma_rxe_multihost_test 2>/dev/null
	rxe_item_remove rxm rxv
	if [ "$RDMA_RS_GUEST" != 0 ]; then
		rdma link delete cxm || return 1
	fi
	ip netns del mhv && rmmod rdma_rs_rxe && rmmod rdma_core
}

ktap_check "setup" setup
ktap_module rdma_rxe_multihost_test
ktap_check "kernel_rping_served" kernel_rping_served
# Stay up a little so the other guest's last exchanges are answered too.
sleep 5
ktap_check "teardown" teardown
ktap_finish
