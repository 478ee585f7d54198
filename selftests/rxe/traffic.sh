#!/bin/sh
# A netdev removed under RC traffic: rdma_rxe_traffic_test keeps RDMA
# WRITEs and READs flowing between rxa (10.78.2.1) and rxb (10.78.2.2) over
# a veth pair between two namespaces; deleting the veth pair unregisters
# both devices, the ULP sees `remove`, stops and frees everything, and the
# stack unloads cleanly afterwards.
. ../lib/rxe_pair.sh

setup() {
	rxe_pair tra ta trb tb 10.78.2
}

gone() { # device
	for _ in $(seq 200); do
		[ -e "/sys/class/rdma_rs/$1" ] || return 0
		sleep 0.1
	done
	return 1
}

remove_under_traffic() {
	dmesg -c > /dev/null
	sleep 1
	ip -n tra link del ta && gone rxa && gone rxb || return 1
	line=$(dmesg | grep "rxetraffic: remove") || { dmesg | tail -20; return 1; }
	echo "# $line"
	n=$(echo "$line" | sed -n 's/.*: \([0-9]*\) requests completed.*/\1/p')
	[ "${n:-0}" -gt 16 ]
}

items_unbound() {
	[ "$(cat "$rxe_cfs/rxa/ibdev")" = "" ] && [ "$(cat "$rxe_cfs/rxb/ibdev")" = "" ]
}

teardown() {
	rmmod rdma_rxe_traffic_test 2>/dev/null
	rmdir "$rxe_cfs/rxa" "$rxe_cfs/rxb" &&
		ip netns del tra && ip netns del trb && rmmod rdma_rs_rxe && rmmod rdma_core
}

ktap_plan
ktap_check "setup" setup
ktap_module rdma_rxe_traffic_test
ktap_check "remove_under_traffic" remove_under_traffic
ktap_check "items_unbound" items_unbound
ktap_check "teardown" teardown
ktap_finish
