#!/bin/sh
# Network namespaces as hosts, and veth pairs between them (sourced, after
# cleanup.sh). Everything made here is registered with cleanup_add, so it
# goes away when the program exits even if a step failed. NS "-" is the
# initial namespace.
#
#   netns_add NS...
#       creates the namespaces.
#   netns_veth NS_A DEV_A NS_B DEV_B
#       creates a veth pair, DEV_A in NS_A and DEV_B in NS_B.
#   netns_addr NS DEV ADDR/LEN...
#       adds the addresses to DEV (IPv6 ones without duplicate address
#       detection), then sets DEV up.
#   netns_pair NS_A NS_B PREFIX
#       creates namespaces NS_A and NS_B joined by a veth pair (veth_a in
#       NS_A, veth_b in NS_B), with PREFIX.1/24 and PREFIX.2/24 and the IPv6
#       addresses fd77:X::1/64 and ::2 (X: PREFIX's last number), both up,
#       and lo up in both.
#   netns_cleanup NS...
#       deletes the namespaces now (and so their veths).

# ip, in namespace $1 ("-": the initial one).
netns_ip() {
	_nsi=$1
	shift
	if [ "$_nsi" = - ]; then ip "$@"; else ip -n "$_nsi" "$@"; fi
}

netns_add() {
	for _ns in "$@"; do
		ip netns add "$_ns" || return 1
		cleanup_add ip netns del "$_ns"
	done
}

netns_veth() {
	_na=$1 _da=$2 _nb=$3 _db=$4
	set -- link add "$_da"
	[ "$_na" = - ] || set -- "$@" netns "$_na"
	set -- "$@" type veth peer name "$_db"
	[ "$_nb" = - ] || set -- "$@" netns "$_nb"
	ip "$@" || return 1
	# Deleting one end deletes the pair; if the end moved or went, this
	# does nothing, and a namespace deleted takes its end with it.
	cleanup_add netns_ip "$_na" link del "$_da"
}

netns_addr() {
	_ns=$1 _dev=$2
	shift 2
	for _ad in "$@"; do
		case "$_ad" in
		*:*) netns_ip "$_ns" -6 addr add "$_ad" dev "$_dev" nodad || return 1 ;;
		*) netns_ip "$_ns" addr add "$_ad" dev "$_dev" || return 1 ;;
		esac
	done
	netns_ip "$_ns" link set "$_dev" up
}

netns_pair() {
	_a=$1 _b=$2 _p=$3
	_x=${_p##*.}
	netns_add "$_a" "$_b" || return 1
	netns_veth "$_a" veth_a "$_b" veth_b || return 1
	ip -n "$_a" link set lo up
	ip -n "$_b" link set lo up
	netns_addr "$_a" veth_a "$_p.1/24" "fd77:$_x::1/64" &&
		netns_addr "$_b" veth_b "$_p.2/24" "fd77:$_x::2/64"
}

netns_cleanup() {
	for _ns in "$@"; do ip netns del "$_ns" 2>/dev/null; done
	return 0
}
