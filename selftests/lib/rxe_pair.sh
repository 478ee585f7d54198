#!/bin/sh
# The start of the rxe suites that run between two devices of ours, rxa
# and rxb, each bound in a namespace of its own to one end of a veth pair
# (rxe/rc.sh, ud.sh, mcast.sh, faults.sh, traffic.sh, netdev.sh,
# hostile.sh). Sourced first, from the suite's folder: it sources ktap.sh,
# cleanup.sh (the cleanup at exit, its traps and $tmpd), netns.sh and
# rxe.sh, and adds
#
#   rxe_pair [-m MTU] NS_A DEV_A NS_B DEV_B NET [NET6]
#       loads rdma_rs_rxe; creates namespaces NS_A and NS_B joined by a
#       veth pair, DEV_A in NS_A and DEV_B in NS_B (both of MTU MTU with
#       -m), with NET.1/24 on DEV_A and NET.2/24 on DEV_B (and NET6::1/64
#       and NET6::2/64 with NET6), both up; binds our device rxa to DEV_A
#       and rxb to DEV_B, enabled.
#       All of it goes at exit (cleanup_add) if the suite fails before its
#       teardown.
#   rxe_pair_teardown NS_A NS_B
#       the suite's own teardown, which fails if a step fails: disables and
#       removes rxa and rxb, deletes both namespaces, unloads rdma_rs_rxe
#       and rdma_core.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

rxe_pair() {
	_rpmtu=
	if [ "$1" = -m ]; then
		_rpmtu=$2
		shift 2
	fi
	_rpa=$1 _rpda=$2 _rpb=$3 _rpdb=$4 _rpn=$5 _rpn6=${6:-}
	modprobe rdma_rs_rxe && netns_add "$_rpa" "$_rpb" && netns_veth "$_rpa" "$_rpda" "$_rpb" "$_rpdb" &&
		{ [ -z "$_rpmtu" ] || { ip -n "$_rpa" link set "$_rpda" mtu "$_rpmtu" &&
			ip -n "$_rpb" link set "$_rpdb" mtu "$_rpmtu"; }; } &&
		netns_addr "$_rpa" "$_rpda" "$_rpn.1/24" ${_rpn6:+"$_rpn6::1/64"} &&
		netns_addr "$_rpb" "$_rpdb" "$_rpn.2/24" ${_rpn6:+"$_rpn6::2/64"} &&
		rxe_bind "$_rpa" "$_rpda" rxa && rxe_bind "$_rpb" "$_rpdb" rxb
}

rxe_pair_teardown() {
	echo 0 > "$rxe_cfs/rxa/enable" && echo 0 > "$rxe_cfs/rxb/enable" &&
		rmdir "$rxe_cfs/rxa" "$rxe_cfs/rxb" &&
		ip netns del "$1" && ip netns del "$2" && rmmod rdma_rs_rxe && rmmod rdma_core
}
