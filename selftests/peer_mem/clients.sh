#!/bin/sh
# Peer memory clients that misbehave or that the core cannot serve: the C
# ABI as clients ship it (peer_mem_abi_test), and peer_example_c made to
# return what real or broken clients return: DMA addresses without pages,
# absurd page sizes, counts and entries, and a client that needs a DMA
# device on devices that have none. Each is refused with its errno, counted,
# logged, and leaves nothing of the client's mapped or pinned (peer_user
# checks the client's call counts); the next registration works.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

ib_peers=/sys/kernel/infiniband/memory_peers
pc=/dev/peer_example_c

setup() {
	modprobe rdma_rs_rxe && modprobe peer_mem &&
		netns_add pm_a pm_b && netns_veth pm_a pmv0 pm_b pmv1 &&
		netns_addr pm_a pmv0 10.79.1.1/24 && netns_addr pm_b pmv1 10.79.1.2/24 &&
		rxe_bind pm_a pmv0 pma && rxe_bind pm_b pmv1 pmb &&
		modprobe peer_mem_test && modprobe peer_example_c && [ -c "$pc" ]
}

# refused WHICH COUNTER LOG: peer_user's case WHICH passes, the client's
# statistics file COUNTER went up by one, and the kernel log says LOG.
refused() {
	_before=$(cat "$ib_peers/peer_example_c/$2") || return 1
	dmesg -c > /dev/null
	peer_user fail "$pc" "$1" || return 1
	_after=$(cat "$ib_peers/peer_example_c/$2") || return 1
	echo "$2: $_before -> $_after"
	[ "$_after" -eq $((_before + 1)) ] || return 1
	dmesg | grep -q "$3" || { echo "no log line '$3'"; return 1; }
}

# The client reloaded as GPU clients register (no PEER_MEM_CPU_PAGES).
as_dma_client() { rmmod peer_example_c && modprobe peer_example_c dma_device=1 && [ -c "$pc" ]; }
as_cpu_client() { rmmod peer_example_c && modprobe peer_example_c && [ -c "$pc" ]; }

ktap_plan
ktap_check setup setup
ktap_module peer_mem_abi_test
rmmod peer_mem_abi_test 2>/dev/null
# Its refusals used up the log's rate limit (10 lines in 5 s): wait it out,
# the next cases look for their lines.
sleep 5
ktap_check dma_only_refused refused dma_only num_refused_dma_only \
	'peer_example_c.*DMA addresses without pages (EOPNOTSUPP)'
ktap_check absurd_page_size_refused peer_user fail $pc page_size
ktap_check absurd_nmap_refused peer_user fail $pc nmap
ktap_check absurd_sg_refused peer_user fail $pc sg
ktap_check dma_client_reloaded as_dma_client
ktap_check no_dma_device_refused refused no_dma_device num_refused_no_dma_device \
	'peer_example_c.*needs a DMA device (EOPNOTSUPP)'
ktap_check cpu_client_back as_cpu_client
ktap_check rw_after peer_user rw $pc 64K
ktap_check unload sh -c "rmmod peer_mem_test peer_example_c && rmmod peer_mem"

cleanup_run
ktap_finish
