#!/bin/sh
# UD multicast between rdma_rs_rxe devices: rxa (10.78.6.1, fd00:7c::1) and
# rxb (10.78.6.2, fd00:7c::2), each bound in its own namespace to one end
# of a veth pair; modules/rdma_rxe_mcast_test.rs attaches QPs to an IPv4
# and an IPv6 group and checks fan-out, detach and the limits. Attaching
# joins the IP group on the netdev; the last QP to go leaves it.
. ../lib/rxe_pair.sh

setup() {
	rxe_pair mca ya mcb yb 10.78.6 fd00:7c
}

member() { # NS DEV GROUP
	ip -n "$1" maddr show dev "$2" | grep -qw "$3"
}

# The module left one QP per device in 239.1.2.3: both netdevs are members
# (IGMP); the IPv6 group's QPs are gone, and so is that membership.
show_maddr() {
	ip -n mca maddr show dev ya
	ip -n mcb maddr show dev yb
}

joined() {
	if ! { member mca ya 239.1.2.3 && member mcb yb 239.1.2.3 &&
		! member mca ya ff0e::7c:1 && ! member mcb yb ff0e::7c:1; }; then
		show_maddr
		return 1
	fi
}

# Unloading destroyed the last QPs: the devices left the group.
left() {
	rmmod rdma_rxe_mcast_test || return 1
	if member mca ya 239.1.2.3 || member mcb yb 239.1.2.3; then
		show_maddr
		return 1
	fi
}

teardown() {
	rmmod rdma_rxe_mcast_test 2>/dev/null
	rxe_pair_teardown mca mcb
}

ktap_plan
ktap_check "setup" setup
ktap_module rdma_rxe_mcast_test
ktap_check "joined" joined
ktap_check "left" left
rxe_counters_show rxa | sed 's/^/# /'
ktap_check "teardown" teardown
ktap_finish
