#!/bin/sh
# rdma::kshim::netlink endpoints and the NLDEV codec in the kernel:
# rdma_netlink_test serves netlink unit 31 with an NLDEV server (and
# checks at load that a taken unit is EBUSY and unit 32 EINVAL);
# netlink_user sends libibverbs' and rdma's requests and checks the
# replies, a dump over several datagrams, every error with its errno, the
# CAP_NET_ADMIN check, and that another network namespace gets
# ECONNREFUSED. A process holding a socket of the unit pins the module;
# once it is gone the module unloads and the unit is unregistered.
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
ktap_finish
