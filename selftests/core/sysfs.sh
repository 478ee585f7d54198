#!/bin/sh
# /sys/class/rdma_rs shows a registered device in the layout of
# /sys/class/infiniband, next to the C stack's class, and goes with it.
# While rdma_ib_view_test holds the infiniband view, our devices (swdev0,
# and rxe devices on a veth) also have that tree in /sys/class/infiniband,
# the same file for file, and it goes with the device or the view, in
# either order; with the C stack's ib_core loaded the view is refused.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/rxe.sh

d=/sys/class/rdma_rs/swdev0

expect() { # file text
	got=$(cat "$d/$1" 2>&1)
	[ "$got" = "$2" ] || { echo "$1: got '$got', want '$2'"; return 1; }
}

device_attributes() {
	expect node_guid 5054:00ff:fe12:3456 && expect node_type "1: CA" && expect node_desc "" &&
		expect fw_ver 1.2.3 && expect sys_image_guid 5054:00ff:fe12:3456
}

port_attributes() {
	expect ports/1/state "4: ACTIVE" && expect ports/2/state "1: DOWN" &&
		expect ports/1/phys_state "5: LinkUp" && expect ports/2/phys_state "3: Disabled" &&
		expect ports/1/link_layer Ethernet && expect ports/1/lid 0x0 &&
		expect ports/1/rate "2.5 Gb/sec (1X SDR)" &&
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

ib=/sys/class/infiniband
# The IPv4 GID of 10.78.0.1, as sysfs shows it.
v4gid=0000:0000:0000:0000:0000:ffff:0a4e:0001

# Waits up to about 3 s for CMD to succeed.
wait_for() {
	for _ in $(seq 30); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# Our rxe device rxv on vu0 (10.78.0.1/24), vu0's peer vu1 up.
rxe_on_veth() {
	modprobe rdma_rs_rxe && ip link add vu0 type veth peer name vu1 &&
		cleanup_add ip link del vu0 && ip addr add 10.78.0.1/24 dev vu0 &&
		ip link set vu1 up && ip link set vu0 up && rxe_item_new rxv &&
		echo vu0 > "$rxe_cfs/rxv/netdev" && echo 1 > "$rxe_cfs/rxv/enable" &&
		wait_for grep -qx "$v4gid" /sys/class/rdma_rs/rxv/ports/1/gids/1
}

view_lists_devices() {
	modprobe rdma_ib_view_test && cleanup_add rmmod rdma_ib_view_test &&
		[ -d "$ib/rxv/ports/1" ] && [ -d "$ib/swdev0/ports/2" ]
}

# The files libibverbs and rdma-core's tests read, each gid_attrs and
# pkeys table complete; no "resources", which the C stack lacks.
view_has_libibverbs_files() {
	v="$ib/rxv" p="$ib/rxv/ports/1"
	for f in node_type node_guid sys_image_guid fw_ver node_desc; do
		[ -f "$v/$f" ] || { echo "no $f"; return 1; }
	done
	for f in state phys_state link_layer rate lid sm_lid cap_mask pkeys/0; do
		[ -f "$p/$f" ] || { echo "no ports/1/$f"; return 1; }
	done
	for t in gids gid_attrs/types gid_attrs/ndevs; do
		n=$(find "$p/$t" -type f | wc -l)
		if [ "$n" != 64 ] || [ ! -f "$p/$t/0" ] || [ ! -f "$p/$t/63" ]; then
			echo "$t: $n files"
			return 1
		fi
	done
	[ ! -e "$v/resources" ] && [ "$(cat "$v/node_type")" = "1: CA" ] &&
		[ "$(cat "$v/node_desc")" = rxe ] && [ "$(cat "$p/pkeys/0")" = 0xffff ]
}

# Prints each file listed in $tmpd/files (relative to the current folder)
# with the status of reading its first line and that line (a shell builtin:
# no process per file), then all files' bytes in a row (one cat).
read_files() {
	while IFS= read -r f; do
		if IFS= read -r line < "$f" 2> /dev/null; then
			echo "$f: $line"
		else
			echo "$f failed"
		fi
	done < "$tmpd/files"
	xargs cat < "$tmpd/files" 2> /dev/null
	return 0
}

# Every file of the view's tree of device $1, but the driver core's own
# (uevent, power/), reads the same in its rdma_rs tree, byte for byte, and
# fails to read in one if it does in the other; at least $2 files. Leaves
# the outputs in $tmpd.
same_as_rdma_rs() {
	(cd "$ib/$1" && find . -path ./power -prune -o -type f ! -name uevent -print | sort) \
		> "$tmpd/files" || return 1
	[ "$(wc -l < "$tmpd/files")" -ge "$2" ] || { echo "$1: too few files"; return 1; }
	for t in rdma_rs infiniband; do
		(cd "/sys/class/$t/$1" && read_files > "$tmpd/$t.out") || return 1
	done
	cmp "$tmpd/rdma_rs.out" "$tmpd/infiniband.out"
}

# Both devices; for rxv the outputs hold the IPv4 GID and an empty entry's
# failed type read, so the comparison saw both kinds.
view_matches_rdma_rs_tree() {
	same_as_rdma_rs swdev0 40 && same_as_rdma_rs rxv 200 || return 1
	grep -qx "./ports/1/gids/1: $v4gid" "$tmpd/infiniband.out" || { echo "no IPv4 GID"; return 1; }
	grep -qx "./ports/1/gid_attrs/types/63 failed" "$tmpd/infiniband.out" ||
		{ echo "types/63 read"; return 1; }
}

# The IPv4 GID's entries; an empty entry reads as the zero GID, and its
# type and netdev fail to read (EINVAL), as in the C stack.
view_ipv4_gid() {
	p="$ib/rxv/ports/1"
	[ "$(cat "$p/gids/1")" = "$v4gid" ] && [ "$(cat "$p/gid_attrs/types/1")" = "RoCE v2" ] &&
		[ "$(cat "$p/gid_attrs/ndevs/1")" = vu0 ] && [ "$(cat "$p/gid_attrs/ndevs/0")" = vu0 ] &&
		[ "$(cat /sys/class/rdma_rs/rxv/ports/1/gid_attrs/ndevs/1)" = vu0 ] &&
		[ "$(cat "$p/gids/63")" = 0000:0000:0000:0000:0000:0000:0000:0000 ] &&
		! cat "$p/gid_attrs/types/63" 2> /dev/null && ! cat "$p/gid_attrs/ndevs/63" 2> /dev/null
}

# A device registered while the view is held gets its tree; removed before
# the view, it takes the tree along.
device_added_and_removed_under_view() {
	rxe_item_new rxw && echo vu1 > "$rxe_cfs/rxw/netdev" && echo 1 > "$rxe_cfs/rxw/enable" &&
		[ -d "$ib/rxw/ports/1/gid_attrs/ndevs" ] && rxe_item_remove rxw && [ ! -e "$ib/rxw" ] &&
		[ ! -e /sys/devices/virtual/infiniband/rxw ] && [ -d "$ib/rxv" ]
}

# The view removed before the device, while its files are being read: the
# class and every tree go (removal waits for the reads in progress), the
# rdma_rs trees stay; then the device goes, leaving nothing.
view_removed_before_device() {
	pids=
	for f in gids/1 gid_attrs/ndevs/1 gid_attrs/types/1 rate; do
		(while :; do cat "$ib/rxv/ports/1/$f" > /dev/null 2>&1 || exit 0; done) &
		pids="$pids $!"
	done
	sleep 1
	rmmod rdma_ib_view_test || return 1
	# shellcheck disable=SC2086 # one word per pid
	kill $pids 2> /dev/null
	wait
	[ ! -e "$ib" ] && [ ! -e /sys/devices/virtual/infiniband ] &&
		[ "$(cat /sys/class/rdma_rs/rxv/ports/1/gids/1)" = "$v4gid" ] &&
		rxe_item_remove rxv && [ ! -e /sys/class/rdma_rs/rxv ] && rmmod rdma_rs_rxe
}

# With the C stack's ib_core loaded, /sys/class/infiniband is its own: the
# view is refused (EEXIST), says so in the log, and our tree is untouched.
# (modprobe takes EEXIST from a module's init for "loaded already" and
# succeeds: insmod tells.)
view_refused_under_c_ib_core() {
	modprobe ib_core && cleanup_add modprobe -r ib_core && dmesg -c > /dev/null || return 1
	if err=$(insmod "$(modinfo -n rdma_ib_view_test)" 2>&1); then
		echo "the view registered"
		return 1
	fi
	echo "$err" | grep -q "File exists" || { echo "insmod: $err"; return 1; }
	if grep -q "^rdma_ib_view_test " /proc/modules; then
		echo "loaded"
		return 1
	fi
	dmesg | grep -q "/sys/class/infiniband exists (the C stack's ib_core owns it)" ||
		{ echo "no log line"; return 1; }
	[ ! -e "$ib/swdev0" ] && [ ! -e /sys/devices/virtual/infiniband/swdev0 ] &&
		expect node_type "1: CA" && expect ports/1/gids/0 0000:0000:0000:0000:0000:ffff:0a4d:0501 &&
		modprobe -r ib_core && [ ! -e "$ib" ]
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
ktap_check "rxe_on_veth" rxe_on_veth
ktap_check "view_lists_devices" view_lists_devices
ktap_check "view_has_libibverbs_files" view_has_libibverbs_files
ktap_check "view_matches_rdma_rs_tree" view_matches_rdma_rs_tree
ktap_check "view_ipv4_gid" view_ipv4_gid
ktap_check "device_added_and_removed_under_view" device_added_and_removed_under_view
ktap_check "view_removed_before_device" view_removed_before_device
ktap_check "view_refused_under_c_ib_core" view_refused_under_c_ib_core
ktap_check "coexists_with_c_class" coexists_with_c_class
ktap_check "core_unload_is_refused_while_used" core_unload_is_refused_while_used
ktap_check "unload_removes_device" sh -c "rmmod rdma_swdev && [ ! -e $d ]"
ktap_check "rdma_core_unloads" sh -c "rmmod rdma_core && [ ! -e /sys/class/rdma_rs ]"
ktap_finish
