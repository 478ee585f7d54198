#!/bin/sh
# `make run`: load our stack (rdma_core, a software test device, a ULP with
# verbs objects on it) and the kernel's C stack side by side and show their
# state. Prints KTAP so the host can judge the run.
cd "$(dirname "$0")/foundation" || exit 1
. ../lib/ktap.sh

show() {
	echo "### $*"
	"$@" 2>&1 | sed 's/^/    /'
}

ktap_plan 6
ktap_check "load_rdma_core" modprobe rdma_core
ktap_check "load_software_device" modprobe rdma_swdev
ktap_check "load_kernel_rdma_rxe" modprobe rdma_rxe
ip link add veth_d0 type veth peer name veth_d1
ip link set veth_d0 up
ip link set veth_d1 up
ktap_check "kernel_rxe_device_on_veth" rdma link add rxe_demo type rxe netdev veth_d0
show lsmod
show sh -c 'dmesg | grep -E "rdma_core|rdma_rxe"'
show rdma link show
show ibv_devices
show sh -c 'for f in node_guid node_type fw_ver ports/1/state ports/1/phys_state \
	ports/1/link_layer ports/1/gids/0 ports/1/pkeys/0 ports/2/state; do
	printf "%-40s %s\n" "/sys/class/rdma_rs/swdev0/$f" "$(cat /sys/class/rdma_rs/swdev0/$f)"
done'
ktap_module rdma_xmod_test
# A ULP on our software device: a PD, a CQ, an MR and a QP, seen in sysfs.
modprobe rdma_ulp_test
show sh -c 'echo "/sys/class/rdma_rs/swdev0/resources:"; cat /sys/class/rdma_rs/swdev0/resources'
ktap_check "ulp_unloads" rmmod rdma_ulp_test
rdma link delete rxe_demo
ip link del veth_d0
ktap_finish
