#!/bin/sh
# Network namespaces as hosts (sourced).
#
#   netns_pair NS_A NS_B PREFIX
#       creates namespaces NS_A and NS_B joined by a veth pair (veth_a in
#       NS_A, veth_b in NS_B), with PREFIX.1/24 and PREFIX.2/24 and the IPv6
#       addresses fd77:X::1/64 and ::2 (X: PREFIX's last number), both up;
#       returns once IPv6 duplicate address detection is done.
#   netns_cleanup NS...  deletes the namespaces (and so their veths)

netns_pair() {
	_a=$1 _b=$2 _p=$3
	_x=${_p##*.}
	ip netns add "$_a" || return 1
	ip netns add "$_b" || return 1
	ip link add veth_a netns "$_a" type veth peer name veth_b netns "$_b" || return 1
	ip -n "$_a" link set lo up
	ip -n "$_b" link set lo up
	ip -n "$_a" addr add "$_p.1/24" dev veth_a
	ip -n "$_b" addr add "$_p.2/24" dev veth_b
	ip -n "$_a" -6 addr add "fd77:$_x::1/64" dev veth_a nodad
	ip -n "$_b" -6 addr add "fd77:$_x::2/64" dev veth_b nodad
	ip -n "$_a" link set veth_a up
	ip -n "$_b" link set veth_b up
}

netns_cleanup() {
	for _ns in "$@"; do ip netns del "$_ns" 2>/dev/null; done
	return 0
}
