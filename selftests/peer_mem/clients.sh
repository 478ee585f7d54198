#!/bin/sh
# Peer memory clients: the C ABI as clients ship it (peer_mem_abi_test).
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

pc=/dev/peer_example_c

setup() {
	modprobe rdma_rs_rxe && modprobe peer_mem &&
		netns_add pm_a pm_b && netns_veth pm_a pmv0 pm_b pmv1 &&
		netns_addr pm_a pmv0 10.79.1.1/24 && netns_addr pm_b pmv1 10.79.1.2/24 &&
		rxe_bind pm_a pmv0 pma && rxe_bind pm_b pmv1 pmb &&
		modprobe peer_mem_test && modprobe peer_example_c && [ -c "$pc" ]
}

ktap_plan
ktap_check setup setup
ktap_module peer_mem_abi_test
rmmod peer_mem_abi_test 2>/dev/null
ktap_check unload sh -c "rmmod peer_mem_test peer_example_c && rmmod peer_mem"

cleanup_run
ktap_finish
