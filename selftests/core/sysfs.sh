#!/bin/sh
# /sys/class/rdma_rs shows a registered device in the layout of
# /sys/class/infiniband, next to the C stack's class, and goes with it.
. ../lib/ktap.sh
. ../lib/cleanup.sh

d=/sys/class/rdma_rs/swdev0

expect() { # file text
	got=$(cat "$d/$1" 2>&1)
	[ "$got" = "$2" ] || { echo "$1: got '$got', want '$2'"; return 1; }
}

device_attributes() {
	expect node_guid 5054:00ff:fe12:3456 && expect node_type "1: CA" &&
		expect fw_ver 1.2.3 && expect sys_image_guid 5054:00ff:fe12:3456
}

port_attributes() {
	expect ports/1/state "4: ACTIVE" && expect ports/2/state "1: DOWN" &&
		expect ports/1/phys_state "5: LinkUp" && expect ports/2/phys_state "3: Disabled" &&
		expect ports/1/link_layer Ethernet && expect ports/1/lid 0x0 &&
		expect ports/1/cap_mask 0x00010000
}

gid_table() {
	expect ports/1/gids/0 0000:0000:0000:0000:0000:ffff:0a4d:0501 &&
		expect ports/1/gids/3 0000:0000:0000:0000:0000:0000:0000:0000 &&
		expect ports/1/gid_attrs/types/0 "RoCE v2" && [ ! -e "$d/ports/1/gids/4" ]
}

pkey_table() {
	expect ports/1/pkeys/0 0xffff && expect ports/2/pkeys/1 0x0000
}

coexists_with_c_class() {
	modprobe rdma_rxe && [ -d /sys/class/infiniband ] && [ -d /sys/class/rdma_rs ] &&
		[ ! -e /sys/class/infiniband/swdev0 ] && modprobe -r rdma_rxe
}

core_unload_is_refused_while_used() {
	! rmmod rdma_core 2>/dev/null && [ -d "$d" ]
}

ktap_plan
ktap_check "load_software_device" modprobe rdma_swdev
ktap_check "device_attributes" device_attributes
ktap_check "port_attributes" port_attributes
ktap_check "gid_table" gid_table
ktap_check "pkey_table" pkey_table
ktap_check "coexists_with_c_class" coexists_with_c_class
ktap_check "core_unload_is_refused_while_used" core_unload_is_refused_while_used
ktap_check "unload_removes_device" sh -c "rmmod rdma_swdev && [ ! -e $d ]"
ktap_check "rdma_core_unloads" sh -c "rmmod rdma_core && [ ! -e /sys/class/rdma_rs ]"
ktap_finish
