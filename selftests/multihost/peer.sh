#!/bin/sh
# Each guest brings up eth0 as 10.77.9.(N+1) and reaches the other.
# Skips on a machine without eth0 or without RDMA_RS_GUEST (not a test guest).
. ../lib/ktap.sh
. ../lib/cleanup.sh

ktap_plan
if [ -z "$RDMA_RS_GUEST" ] || ! ip link show eth0 > /dev/null 2>&1; then
	ktap_skip "eth0_up" "not a joined test guest"
	ktap_skip "peer_reachable" "not a joined test guest"
	ktap_finish
fi
me=$((RDMA_RS_GUEST + 1))
peer=$((2 - RDMA_RS_GUEST))
# eth0 keeps its address when this ends: the other guest may still be
# pinging it, and eth0 is the guest's own, not something made here.
ktap_check "eth0_up" sh -c "ip addr add 10.77.9.$me/24 dev eth0 && ip link set eth0 up"
# The other guest may still be booting: try for up to two minutes.
ok=0
for _ in $(seq 60); do
	if ping -c 1 -W 2 "10.77.9.$peer" > /dev/null 2>&1; then ok=1; break; fi
done
# Stay up a little so the peer's own pings are answered too.
sleep 5
if [ $ok = 1 ]; then ktap_pass "peer_reachable"; else ktap_fail "peer_reachable" "10.77.9.$peer"; fi
ktap_finish
