#!/bin/sh
# `make run`, guest 1: the kernel's side of the demo's last part. User
# space on the kernel's C stack (rdma_rxe on eth0, ib_uverbs, rdma_ucm)
# runs unchanged rping with user space on our stack in guest 0 (demo.sh):
# it serves guest 0's client, then connects to guest 0's server.
# Prints KTAP so the host can judge the run.
cd "$(dirname "$0")/foundation" || exit 1
# shellcheck source=lib/ktap.sh
. ../lib/ktap.sh
# shellcheck source=lib/cleanup.sh
. ../lib/cleanup.sh
# shellcheck source=lib/cmtools.sh
. ../lib/cmtools.sh

ktap_plan
c_peer() {
	ip addr add 10.77.9.2/24 dev eth0 && ip link set eth0 up &&
		modprobe rdma_rxe && modprobe ib_uverbs && modprobe rdma_ucm &&
		rdma link add cxm type rxe netdev eth0
}
ktap_check "kernel_stack_on_eth0" c_peer
ktap_check "kernel_rping_serves_ours" rping_serve 10.77.9.2 7480
ktap_check "kernel_rping_connects_to_ours" rping_connect 10.77.9.1 7481
rdma link delete cxm
ktap_finish
