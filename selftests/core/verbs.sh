#!/bin/sh
# The verbs object model on rdma_swdev's software devices
# (modules/rdma_verbs_test.rs), the resource counts in sysfs, and a provider
# unloaded under a ULP that holds objects on its devices (and the reverse),
# with the ULP's own port group in sysfs on the devices.
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

# The ULP's port group (ports/<N>/ulptest/where) on both ports of swdev0.
ulp_group_is() { # present|absent
	for p in 1 2; do
		d=/sys/class/rdma_rs/swdev0/ports/$p/ulptest
		if [ "$1" = present ]; then
			[ "$(cat "$d/where")" = "swdev0 $p" ] || { echo "$d/where: '$(cat "$d/where")'"; return 1; }
		elif [ -e "$d" ]; then
			echo "$d is still there"; return 1
		fi
	done
}

# The device registered again after the ULP's port group has it too; the
# group goes with the ULP.
ulp_unloads_under_provider() {
	modprobe rdma_swdev && counts_are 1 1 1 1 && ulp_group_is present &&
		rmmod rdma_ulp_test && counts_are 0 0 0 0 && ulp_group_is absent
}

ktap_plan
ktap_check "load_software_devices" modprobe rdma_swdev
ktap_module rdma_verbs_test
rmmod rdma_verbs_test 2>/dev/null
# Unloading after all that use (the CQ pool goes with the devices), and back.
ktap_check "provider_reloads" provider_reloads
ktap_check "ulp_holds_objects" ulp_holds_objects
# The ULP registered its port group after the device: it is on its ports.
ktap_check "port_group_on_existing_device" ulp_group_is present
ktap_check "provider_unloads_under_ulp" provider_unloads_under_ulp
ktap_check "ulp_unloads_under_provider" ulp_unloads_under_provider
ktap_check "provider_unloads" rmmod rdma_swdev
ktap_check "rdma_core_unloads" rmmod rdma_core
ktap_finish
