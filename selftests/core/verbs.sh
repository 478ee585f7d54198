#!/bin/sh
# The verbs object model on rdma_swdev's software devices
# (modules/rdma_verbs_test.rs), the resource counts in sysfs, and a provider
# unloaded under a ULP that holds objects on its devices (and the reverse).
. ../lib/ktap.sh
. ../lib/cleanup.sh

res=/sys/class/rdma_rs/swdev0/resources

count() { # kind
	sed -n "s/^$1 //p" "$res"
}

counts_are() { # pd cq qp mr
	[ "$(count pd) $(count cq) $(count qp) $(count mr)" = "$*" ] ||
		{ echo "resources: $(tr '\n' ' ' < "$res"), want pd/cq/qp/mr $*"; return 1; }
}

provider_reloads() {
	rmmod rdma_swdev && modprobe rdma_swdev && counts_are 0 0 0 0
}

ulp_holds_objects() {
	modprobe rdma_ulp_test && dmesg | grep -q "ulptest: add \"swdev0\"" && counts_are 1 1 1 1
}

provider_unloads_under_ulp() {
	dmesg -c > /dev/null
	rmmod rdma_swdev && [ ! -e /sys/class/rdma_rs/swdev0 ] &&
		dmesg | grep -q "ulptest: remove \"swdev0\"" &&
		! dmesg | grep -q "left at unregistration"
}

ulp_unloads_under_provider() {
	modprobe rdma_swdev && counts_are 1 1 1 1 && rmmod rdma_ulp_test && counts_are 0 0 0 0
}

ktap_plan
ktap_check "load_software_devices" modprobe rdma_swdev
ktap_module rdma_verbs_test
rmmod rdma_verbs_test 2>/dev/null
# Unloading after all that use (the CQ pool goes with the devices), and back.
ktap_check "provider_reloads" provider_reloads
ktap_check "ulp_holds_objects" ulp_holds_objects
ktap_check "provider_unloads_under_ulp" provider_unloads_under_ulp
ktap_check "ulp_unloads_under_provider" ulp_unloads_under_provider
ktap_check "provider_unloads" rmmod rdma_swdev
ktap_check "rdma_core_unloads" rmmod rdma_core
ktap_finish
