#!/bin/sh
# Connections made by our rdma_cm: our rxa (10.84.0.1, namespace cma) and
# rxb (10.84.0.2, namespace cmb) on one veth pair, for ours to ours; and
# our rxc (10.85.0.2, namespace cmc) facing the kernel's rdma_rxe device
# cxc (10.85.0.1, initial namespace) on another, for ours to the kernel's
# rdma_cm both ways (through the C endpoints of rxe_cpeer). The cases are
# in modules/rdma_rxe_cm_test.rs; afterwards the CM counters in sysfs must
# show what went on the wire.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

cfs=/sys/kernel/config/rdma_rs_rxe

setup() {
	modprobe rdma_rxe && modprobe ib_cm && modprobe rdma_cm && modprobe rdma_rs_rxe &&
		netns_add cma cmb cmc && netns_veth cma ca cmb cb && netns_veth - ci cmc cc &&
		netns_addr cma ca 10.84.0.1/24 && netns_addr cmb cb 10.84.0.2/24 &&
		netns_addr - ci 10.85.0.1/24 && netns_addr cmc cc 10.85.0.2/24 &&
		rxe_bind cma ca rxa && rxe_bind cmb cb rxb && rxe_bind cmc cc rxc &&
		c_rxe_add cxc ci
}

# Every REQ of the module's connections was answered: ours to ours made
# three REQs to rxb (one connected, one rejected by the consumer, one for
# a port nobody listens on); rxc took one REQ from the kernel's rdma_cm
# and sent one to it.
counters() {
	b=/sys/class/rdma_rs/rxb/ports/1
	c=/sys/class/rdma_rs/rxc/ports/1
	want() {
		v=$(cat "$1") || return 1
		[ "$v" = "$2" ] || { echo "$1: $v, want $2"; return 1; }
	}
	want "$b/cm_rx_msgs/req" 3 && want "$b/cm_tx_msgs/rej" 2 && want "$b/cm_tx_msgs/rep" 1 &&
		want "$b/cm_rx_msgs/rtu" 1 && want "$c/cm_rx_msgs/req" 1 && want "$c/cm_tx_msgs/req" 1 &&
		want "$c/cm_tx_msgs/rep" 1 && want "$c/cm_rx_msgs/rep" 1
}

teardown() {
	rmmod rdma_rxe_cm_test 2>/dev/null
	rmmod rxe_cpeer 2>/dev/null
	for d in rxa rxb rxc; do echo 0 > "$cfs/$d/enable" && rmdir "$cfs/$d" || return 1; done
	rdma link delete cxc && ip link del ci && ip netns del cma && ip netns del cmb && ip netns del cmc &&
		rmmod rdma_rxe && rmmod rdma_rs_rxe && rmmod rdma_core &&
		{ rmmod rdma_cm iw_cm 2>/dev/null; rmmod ib_cm 2>/dev/null || true; }
}

ktap_plan
ktap_check "setup" setup
ktap_module rdma_rxe_cm_test
ktap_check "counters" counters
ktap_check "teardown" teardown
ktap_finish
