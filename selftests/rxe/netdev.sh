#!/bin/sh
# Our devices on netdevs that change or are not plain Ethernet ports.
#
# VLAN: rxa and rxb bound to VLAN 7 devices on top of a veth pair between
# two namespaces (10.78.0.1, fd00:78::1 and 10.78.0.2, fd00:78::2, the
# addresses of modules/rdma_rxe_ud_test.rs, on the VLAN devices only): the
# UD test passes, and its packets crossed the VLAN devices.
#
# MTU: rxa and rxb on a veth pair (10.78.5.1, 10.78.5.2) whose MTU goes
# from 1500 to 9000 and back while modules/rdma_rxe_netdev_test.rs has QPs
# (it says when in the kernel log).
. ../lib/rxe_pair.sh

vlan_setup() {
	modprobe rdma_rs_rxe && netns_add nva nvb && netns_veth nva va nvb vb &&
		ip -n nva link set va up && ip -n nvb link set vb up &&
		ip -n nva link add link va name va.7 type vlan id 7 &&
		ip -n nvb link add link vb name vb.7 type vlan id 7 &&
		netns_addr nva va.7 10.78.0.1/24 fd00:78::1/64 &&
		netns_addr nvb vb.7 10.78.0.2/24 fd00:78::2/64 &&
		rxe_bind nva va.7 rxa && rxe_bind nvb vb.7 rxb &&
		[ "$(cat "$rxe_cfs/rxa/netdev")" = va.7 ]
}

dev_stat() { # NS DEV NAME
	ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"
}

# The UD test's datagrams went out and came in on the VLAN devices.
vlan_carried() {
	if ! { [ "$(dev_stat nva va.7 tx_packets)" -ge 8 ] &&
		[ "$(dev_stat nvb vb.7 rx_packets)" -ge 8 ]; }; then
		ip -n nva -s link show va.7
		ip -n nvb -s link show vb.7
		return 1
	fi
}

vlan_teardown() {
	rmmod rdma_rxe_ud_test 2>/dev/null
	echo 0 > "$rxe_cfs/rxa/enable" && echo 0 > "$rxe_cfs/rxb/enable" && rmdir "$rxe_cfs/rxa" "$rxe_cfs/rxb" &&
		ip netns del nva && ip netns del nvb
}

mtu_setup() {
	rxe_pair nma ta5 nmb tb5 10.78.5
}

set_mtu() { # MTU
	ip -n nma link set ta5 mtu "$1" && ip -n nmb link set tb5 mtu "$1"
}

# Waits for the module's line "netdev: ready for $1", then sets MTU $2.
on_request() { # WORDS MTU
	for _ in $(seq 1200); do
		if dmesg | grep -q "netdev: ready for $1"; then
			set_mtu "$2"
			return
		fi
		sleep 0.1
	done
}

mtu_watch() {
	on_request "a larger MTU" 9000
	on_request "a smaller MTU" 1500
}

teardown() {
	rmmod rdma_rxe_netdev_test 2>/dev/null
	rxe_pair_teardown nma nmb
}

ktap_plan
ktap_check "vlan_setup" vlan_setup
ktap_module rdma_rxe_ud_test
ktap_check "vlan_carried" vlan_carried
ktap_check "vlan_teardown" vlan_teardown
ktap_check "mtu_setup" mtu_setup
dmesg -c > /dev/null
mtu_watch &
watch=$!
cleanup_add kill "$watch"
ktap_module rdma_rxe_netdev_test
wait "$watch"
ktap_check "teardown" teardown
ktap_finish
