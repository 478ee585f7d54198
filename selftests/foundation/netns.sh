#!/bin/sh
# Two hosts in one guest: network namespaces joined by a veth pair.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh

ktap_plan
ktap_check "create_veth_pair_between_namespaces" netns_pair ns_a ns_b 10.77.1
ktap_check "ping_across_ipv4" ip netns exec ns_a ping -c 2 -W 5 10.77.1.2
ktap_check "ping_across_ipv6" ip netns exec ns_b ping -c 2 -W 5 fd77:1::1
netns_cleanup ns_a ns_b
ktap_finish
