#!/bin/sh
# A flood of REQs that never complete at our CM, while a ULP connects and
# disconnects: rxa (10.86.0.1, namespace cfa) and rxb (10.86.0.2 and
# 10.86.0.3, namespace cfb) on one veth pair. From 10.86.0.3 a UD QP on
# rxb sends 1536 REQs with fresh communication IDs to rxa's listener;
# from 10.86.0.2 a client connects and disconnects meanwhile. The cases
# are in modules/rdma_rxe_cm_flood_test.rs: the REQs beyond the bound of
# half-open connections from one source are refused (REJ NO_RESOURCES),
# every legitimate connect succeeds with no REQ resent, and once the
# flood's REPs time out nothing is half-open and no connection or id is
# left. Then rxa's sysfs must show the same: nothing half-open, the
# refusals counted.
. ../lib/rxe_pair.sh

setup() {
	rxe_pair cfa fa cfb fb 10.86.0 && netns_addr cfb fb 10.86.0.3/24
}

sysfs() {
	p=/sys/class/rdma_rs/rxa/ports/1/cm_half_open
	want() {
		v=$(cat "$p/$1") || return 1
		[ "$v" = "$2" ] || { echo "$p/$1: $v, want $2"; return 1; }
	}
	max=$(cat "$p/max_per_source") || return 1
	[ -n "$_connects" ] || { echo "no count of legitimate connects in the log"; return 1; }
	[ -n "$_flood" ] || { echo "no count of flood REQs in the log"; return 1; }
	want current 0 && want refused $((_flood - max)) && want max_per_port 4096 && want max_per_source 1024 &&
		want ../cm_tx_msgs/rej $((_flood - max)) && want ../cm_tx_msgs/rep $((max + _connects)) &&
		want ../cm_tx_retries/rep 0
}

teardown() {
	rmmod rdma_rxe_cm_flood_test 2>/dev/null
	rxe_pair_teardown cfa cfb
}

ktap_plan
ktap_check "setup" setup
dmesg -c > /dev/null
ktap_module rdma_rxe_cm_flood_test
dmesg | sed -n 's/^.*\(cm flood: \)/# \1/p'
_flood=$(dmesg | sed -n 's/.*cm flood: \([0-9][0-9]*\) REQs in .*/\1/p' | tail -n 1)
_connects=$(dmesg | sed -n 's/.*cm flood: .* \([0-9][0-9]*\) legitimate connects.*/\1/p' | tail -n 1)
ktap_check "sysfs" sysfs
ktap_check "teardown" teardown
ktap_finish
