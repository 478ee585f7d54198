#!/bin/sh
# rdma::kshim::netlink endpoints and the NLDEV codec in the kernel:
# rdma_netlink_test serves netlink unit 31 with an NLDEV server (and
# checks at load that a taken unit is EBUSY and unit 32 EINVAL);
# netlink_user sends libibverbs' and rdma's requests and checks the
# replies, a dump over several datagrams, every error with its errno, the
# CAP_NET_ADMIN check, and that a network namespace made later is served
# too. A process holding a socket of the unit pins the module;
# once it is gone the module unloads and the unit is unregistered.
# rdma_netlink_rdma serves the same server on NETLINK_RDMA, for the
# guest's real rdma tool (unless the C ib_core holds the unit), and keeps
# ib_core from loading meanwhile.
. ../lib/ktap.sh
. ../lib/cleanup.sh

ready=$tmpd/ready

# Waits up to 5 s for $ready.
wait_ready() {
	i=0
	while [ ! -e "$ready" ] && [ "$i" -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -e "$ready" ]
}

ktap_plan
ktap_check "load" modprobe rdma_netlink_test
ktap_check "requests" netlink_user requests
ktap_check "dump" netlink_user dump
ktap_check "errors" netlink_user errors
ktap_check "admin" netlink_user admin
ktap_check "netns" netlink_user netns
netlink_user hold "$ready" &
holder=$!
cleanup_add kill "$holder"
ktap_check "hold" wait_ready
ktap_check "pinned_while_open" sh -c '! rmmod rdma_netlink_test'
kill "$holder"
wait "$holder" 2> /dev/null
ktap_check "unload" rmmod rdma_netlink_test
ktap_check "unregistered" netlink_user gone

# `rdma dev`: the 40 devices of the server, in order.
rdma_dev() {
	out=$(rdma dev) || return 1
	echo "$out"
	[ "$(echo "$out" | wc -l)" = 40 ] &&
		echo "$out" | grep -q "^0: nltest0: node_type ca node_guid 0000:0000:0000:1000 " &&
		echo "$out" | grep -q "^39: nltest39: node_type ca "
}

# rdma_out PATTERN ARGS...: `rdma ARGS` succeeds and prints PATTERN.
rdma_out() {
	pat=$1
	shift
	out=$(rdma "$@") || return 1
	echo "$out"
	echo "$out" | grep -q "$pat"
}

rdma_cases="load_on_netlink_rdma rdma_dev rdma_dev_show rdma_link_show rdma_system
	rdma_link_add_delete ib_core_kept_out unload_netlink_rdma ib_core_loads_after"
if [ -d /sys/module/ib_core ]; then
	# Through a variable: ktap_plan counts the names written after
	# ktap_skip, and these are the names of the cases below.
	skip=ktap_skip
	for c in $rdma_cases; do
		$skip "$c" "the C ib_core holds NETLINK_RDMA"
	done
else
	ktap_check "load_on_netlink_rdma" modprobe rdma_netlink_rdma
	ktap_check "rdma_dev" rdma_dev
	ktap_check "rdma_dev_show" rdma_out "^3: nltest3: .*node_guid 0000:0000:0000:1003 sys_image_guid 0000:0000:0000:1000" dev show nltest3
	ktap_check "rdma_link_show" rdma_out "^link nltest2/1 state ACTIVE physical_state LINK_UP netdev lo" link show nltest2/1
	ktap_check "rdma_system" rdma_out "netns shared .*copy-on-fork on" system
	ktap_check "rdma_link_add_delete" sh -c 'rdma link add nltestx type rxe netdev lo &&
		rdma link delete nltest1'
	ktap_check "ib_core_kept_out" sh -c '! modprobe ib_core && [ ! -d /sys/module/ib_core ]'
	ktap_check "unload_netlink_rdma" rmmod rdma_netlink_rdma
	# It was kept out by the endpoint, not for want of a module.
	ktap_check "ib_core_loads_after" sh -c 'modprobe ib_core && rmmod ib_core'
fi
ktap_finish
