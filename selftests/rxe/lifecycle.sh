#!/bin/sh
# rdma_rs_rxe's device life cycle through configfs: bad input gets clear
# errors, a device follows its netdev (carrier, addresses, namespace) and
# goes away with it, and everything unloads.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

cfs=/sys/kernel/config/rdma_rs_rxe
cls=/sys/class/rdma_rs

# wait_for CMD...: up to 5 s for CMD to succeed.
wait_for() {
	for _ in $(seq 50); do "$@" && return 0; sleep 0.1; done
	"$@"
}

# write_fails ERRNO_TEXT FILE VALUE: the write fails, with that error.
write_fails() {
	# busybox sh reports the errno of a failed write (dash says "I/O error").
	if err=$(busybox sh -c "echo $3 > $2" 2>&1); then
		echo "writing '$3' to $2 succeeded"
		return 1
	fi
	echo "$err" | grep -q "$1" || { echo "writing '$3' to $2: '$err', want '$1'"; return 1; }
}

state_is() { # device state-text
	[ "$(cat "$cls/$1/ports/1/state" 2>/dev/null)" = "$2" ]
}

has_gid() { # device gid-text
	cat "$cls/$1/ports/1/gids/"* 2>/dev/null | grep -qx "$2"
}

setup() {
	modprobe rdma_rs_rxe && [ -d "$cfs" ] &&
		netns_veth - rxv0 - rxv1 &&
		ip link set rxv0 up && ip link set rxv1 up &&
		ip addr add 10.66.0.1/24 dev rxv0 && rxe_item_new rxa
}

bad_input() {
	write_fails "No such device" "$cfs/rxa/netdev" nosuchdev &&
		write_fails "Invalid argument" "$cfs/rxa/netdev" lo &&
		write_fails "Invalid argument" "$cfs/rxa/enable" 1 &&
		write_fails "Invalid argument" "$cfs/rxa/enable" 2 &&
		write_fails "Permission denied" "$cfs/rxa/ibdev" x &&
		! mkdir "$cfs/bad%d" 2>/dev/null &&
		[ -z "$(cat "$cfs/rxa/netdev")" ] && [ "$(cat "$cfs/rxa/enable")" = 0 ]
}

# A VLAN netdev binds as the C rxe's does; the claim goes with it.
vlan_accepted() {
	ip link add link rxv1 name rxv1.7 type vlan id 7 &&
		echo rxv1.7 > "$cfs/rxa/netdev" && [ "$(cat "$cfs/rxa/netdev")" = rxv1.7 ] &&
		ip link del rxv1.7 && [ -z "$(cat "$cfs/rxa/netdev")" ]
}

enable_device() {
	echo rxv0 > "$cfs/rxa/netdev" && echo 1 > "$cfs/rxa/enable" &&
		[ "$(cat "$cfs/rxa/ibdev")" = rxa ] && [ "$(cat "$cfs/rxa/netdev")" = rxv0 ] &&
		[ -d "$cls/rxa" ] && [ "$(cat "$cls/rxa/node_type")" = "1: CA" ] &&
		[ "$(cat "$cls/rxa/ports/1/link_layer")" = Ethernet ]
}

netdev_taken_and_fixed() {
	rxe_item_new rxb &&
		write_fails "busy" "$cfs/rxb/netdev" rxv0 &&
		write_fails "busy" "$cfs/rxa/netdev" rxv1 &&
		rmdir "$cfs/rxb"
}

port_follows_carrier() {
	wait_for state_is rxa "4: ACTIVE" &&
		ip link set rxv1 down && wait_for state_is rxa "1: DOWN" &&
		ip link set rxv1 up && wait_for state_is rxa "4: ACTIVE"
}

gids_follow_addresses() {
	# fe80::<EUI-64 of the MAC> is entry 0.
	IFS=: read -r m1 m2 m3 m4 m5 m6 < /sys/class/net/rxv0/address
	ll=$(printf "fe80:0000:0000:0000:%02x%s:%sff:fe%s:%s%s" $((0x$m1 ^ 2)) "$m2" "$m3" "$m4" "$m5" "$m6")
	[ "$(cat "$cls/rxa/ports/1/gids/0")" = "$ll" ] ||
		{ echo "gids/0: $(cat "$cls/rxa/ports/1/gids/0"), want $ll"; return 1; }
	wait_for has_gid rxa 0000:0000:0000:0000:0000:ffff:0a42:0001 &&
		[ "$(cat "$cls/rxa/ports/1/gid_attrs/types/1")" = "RoCE v2" ] &&
		ip addr add 10.66.0.7/24 dev rxv0 &&
		wait_for has_gid rxa 0000:0000:0000:0000:0000:ffff:0a42:0007 &&
		ip addr add fd00::66/64 dev rxv0 nodad &&
		wait_for has_gid rxa fd00:0000:0000:0000:0000:0000:0000:0066 &&
		ip addr del 10.66.0.7/24 dev rxv0 &&
		wait_for sh -c "! cat $cls/rxa/ports/1/gids/* | grep -qx 0000:0000:0000:0000:0000:ffff:0a42:0007"
}

# `ip netns exec` mounts a sysfs of the namespace, without configfs on it.
netdev_in_writers_namespace() {
	netns_add rxns && ip link set rxv1 netns rxns &&
		ip -n rxns link set rxv1 up && rxe_item_new rxc &&
		write_fails "No such device" "$cfs/rxc/netdev" rxv1 &&
		ip netns exec rxns sh -c "mount -t configfs none /sys/kernel/config 2>/dev/null;
			echo rxv1 > $cfs/rxc/netdev && echo 1 > $cfs/rxc/enable" &&
		[ -d "$cls/rxc" ] && wait_for state_is rxc "4: ACTIVE"
}

device_goes_with_netdev() {
	ip link del rxv0 && wait_for sh -c "[ ! -e $cls/rxa ] && [ ! -e $cls/rxc ]" &&
		[ "$(cat "$cfs/rxa/enable")" = 0 ] && [ -z "$(cat "$cfs/rxa/ibdev")" ] &&
		[ -z "$(cat "$cfs/rxc/netdev")" ]
}

disable_and_remove() {
	netns_veth - rxv2 - rxv3 && ip link set rxv2 up &&
		echo rxv2 > "$cfs/rxa/netdev" && echo 1 > "$cfs/rxa/enable" && [ -d "$cls/rxa" ] &&
		echo 0 > "$cfs/rxa/enable" && [ ! -e "$cls/rxa" ] &&
		echo 1 > "$cfs/rxa/enable" && [ -d "$cls/rxa" ] &&
		! rmmod rdma_rs_rxe 2>/dev/null &&
		rmdir "$cfs/rxa" "$cfs/rxc" && [ ! -e "$cls/rxa" ] && ip link del rxv2
}

# Netdev events queue a device's work. Removing the device, and unloading
# the module, right after them must wait for that work: were any of it left
# to run, it would run unloaded code (a crash or a splat fails the run).
events_then_unload() {
	netns_veth - rxv4 - rxv5 && ip link set rxv4 up || return 1
	for i in 1 2 3 4 5; do
		rxe_item_new "rxq$i" && echo rxv4 > "$cfs/rxq$i/netdev" &&
			echo 1 > "$cfs/rxq$i/enable" &&
			ip link set rxv4 down && ip addr add "10.67.0.$i/24" dev rxv4 &&
			ip link set rxv4 up &&
			rmdir "$cfs/rxq$i" && rmmod rdma_rs_rxe && modprobe rdma_rs_rxe || return 1
	done
	# The netdev goes too: its work removes the device while the item
	# goes and the module unloads.
	rxe_item_new rxq6 && echo rxv4 > "$cfs/rxq6/netdev" && echo 1 > "$cfs/rxq6/enable" &&
		ip link del rxv4 && rmdir "$cfs/rxq6" && rmmod rdma_rs_rxe && modprobe rdma_rs_rxe
}

# Made only if the driver wrongly accepts the name (bad_input fails then).
cleanup_add rxe_item_remove bad%d

ktap_plan
ktap_check "setup" setup
ktap_check "bad_input" bad_input
ktap_check "vlan_accepted" vlan_accepted
ktap_check "enable_device" enable_device
ktap_check "netdev_taken_and_fixed" netdev_taken_and_fixed
ktap_check "port_follows_carrier" port_follows_carrier
ktap_check "gids_follow_addresses" gids_follow_addresses
ktap_check "netdev_in_writers_namespace" netdev_in_writers_namespace
ktap_check "device_goes_with_netdev" device_goes_with_netdev
ktap_check "disable_and_remove" disable_and_remove
ktap_check "events_then_unload" events_then_unload
ktap_check "modules_unload" sh -c "rmmod rdma_rs_rxe && rmmod rdma_core && ip netns del rxns"
ktap_finish
