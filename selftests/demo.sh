#!/bin/sh
# `make run`: load our stack (rdma_core, a software test device, a ULP with
# verbs objects on it) and the kernel's C stack side by side and show their
# state; then two rdma_rs_rxe devices on a veth pair between two network
# namespaces move 1 MiB with an RDMA WRITE and an RDMA READ. Prints KTAP so
# the host can judge the run.
cd "$(dirname "$0")/foundation" || exit 1
# shellcheck source=lib/ktap.sh
. ../lib/ktap.sh
# shellcheck source=lib/cleanup.sh
. ../lib/cleanup.sh
# shellcheck source=lib/netns.sh
. ../lib/netns.sh
# shellcheck source=lib/rxe.sh
. ../lib/rxe.sh

show() {
	echo "### $*"
	"$@" 2>&1 | sed 's/^/    /'
}

ktap_plan
ktap_check "load_rdma_core" modprobe rdma_core
ktap_check "load_software_device" modprobe rdma_swdev
ktap_check "load_kernel_rdma_rxe" modprobe rdma_rxe
netns_veth - veth_d0 - veth_d1
netns_addr - veth_d0
netns_addr - veth_d1
ktap_check "kernel_rxe_device_on_veth" c_rxe_add rxe_demo veth_d0
show lsmod
show sh -c 'dmesg | grep -E "rdma_core|rdma_rxe"'
show rdma link show
show ibv_devices
# shellcheck disable=SC2016 # expanded by the inner sh, not here
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

# Our rxe: rxa in namespace demo_a, rxb in demo_b, one veth between them.
cfs=/sys/kernel/config/rdma_rs_rxe
rxe_setup() {
	netns_add demo_a demo_b && netns_veth demo_a dva demo_b dvb &&
		netns_addr demo_a dva 10.78.3.1/24 && netns_addr demo_b dvb 10.78.3.2/24 &&
		rxe_bind demo_a dva rxa && rxe_bind demo_b dvb rxb
}
rxe_teardown() {
	rmmod rdma_rxe_demo 2>/dev/null
	echo 0 > "$cfs/rxa/enable" && echo 0 > "$cfs/rxb/enable" && rmdir "$cfs/rxa" "$cfs/rxb" &&
		ip netns del demo_a && ip netns del demo_b && rmmod rdma_rs_rxe
}
ktap_check "load_rdma_rs_rxe" modprobe rdma_rs_rxe
ktap_check "rxe_devices_on_veth_between_namespaces" rxe_setup
rxe_ports() {
	for d in rxa rxb; do
		printf "%s: port %s, gid %s\n" "$d" "$(cat "/sys/class/rdma_rs/$d/ports/1/state")" \
			"$(cat "/sys/class/rdma_rs/$d/ports/1/gids/1")"
	done
}
rxe_summary() {
	dmesg | sed -n "s/^.*rxe demo: //p"
}
rxe_counters() {
	for d in rxa rxb; do echo "$d: $(tr '\n' ' ' < "$cfs/$d/counters")"; done
}
show rxe_ports
ktap_module rdma_rxe_demo
show rxe_summary
show rxe_counters
ktap_check "rxe_teardown" rxe_teardown
ktap_finish
