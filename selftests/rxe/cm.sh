#!/bin/sh
# Connections made by our rdma_cm: our rxa (10.84.0.1, namespace cma) and
# rxb (10.84.0.2, namespace cmb) on one veth pair, for ours to ours; and
# our rxc (10.85.0.2, namespace cmc) facing the kernel's rdma_rxe device
# cxc (10.85.0.1, initial namespace) on another, for ours to the kernel's
# rdma_cm both ways (through the C endpoints of rxe_cpeer). The cases are
# in modules/rdma_rxe_cm_test.rs (SIDR included: between our CMs, and
# from rxc to udaddy's server on cxc); afterwards the CM counters in sysfs
# must show what went on the wire. Then rdma-core's rping, rdma_client,
# rdma_server and ucmatose (librdmacm over the kernel's rxe, from
# userspace) against modules/rdma_rxe_cmtools_test.rs, which speaks their
# protocols, each tool both ways: rping's five iterations validated on
# both ends, rdma_client/rdma_server's exchange, ucmatose's three
# connections of ten messages each way.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh
. ../lib/cmtools.sh

cfs=/sys/kernel/config/rdma_rs_rxe

setup() {
	modprobe rdma_rxe && modprobe ib_cm && modprobe rdma_cm && modprobe rdma_ucm && modprobe rdma_rs_rxe &&
		netns_add cma cmb cmc && netns_veth cma ca cmb cb && netns_veth - ci cmc cc &&
		netns_addr cma ca 10.84.0.1/24 && netns_addr cmb cb 10.84.0.2/24 &&
		netns_addr - ci 10.85.0.1/24 && netns_addr cmc cc 10.85.0.2/24 &&
		rxe_bind cma ca rxa && rxe_bind cmb cb rxb && rxe_bind cmc cc rxc &&
		c_rxe_add cxc ci &&
		ip netns exec cma ip neigh add 10.84.0.99 lladdr 02:00:00:00:00:99 dev ca
}

# The loss case, the module's first: the first packet rxb receives from
# now on is dropped, the second duplicated, the fourth dropped.
arm_faults() {
	echo "hit=rx_drop@nth=1 hit=rx_dup@nth=2 hit=rx_drop@nth=4" > "$cfs/rxb/fault"
}

# Every REQ was answered. rxb received 29 REQs and the resends of the one
# accepted late: the unloaded ULP's, then the module's (the lost one
# never arrived, its resend twice; one connected, one stale from that
# connection's QP, one for a GID not its own, two accepted with and
# without responder resources, sixteen whose listeners went as they
# came, rejected, one accepted late, whose
# resends (one, or two on a slow guest) each got an MRA; one rejected by
# the consumer, one for a port nobody listens on, one whose listener went,
# one whose client's device went), and rejected 21. rxc took
# one REQ from the kernel's rdma_cm and sent one to it (10.84.0.99 answers
# nothing: its MAC is nobody's). Every fault armed on rxb fired.
counters() {
	b=/sys/class/rdma_rs/rxb/ports/1
	c=/sys/class/rdma_rs/rxc/ports/1
	want() {
		v=$(cat "$1") || return 1
		[ "$v" = "$2" ] || { echo "$1: $v, want $2"; return 1; }
	}
	grep -qx "hits_pending 0" "$cfs/rxb/fault" || { cat "$cfs/rxb/fault"; return 1; }
	# 28 distinct REQs reach rxb, and duplicates: one the fault made, and
	# the resends of the late accept (at least one). rxb answers those
	# with MRAs, and may also send the delayed MRA on its own when the
	# guest is slow, so MRAs are at least one and need not match resends.
	_mra=$(cat "$b/cm_tx_msgs/mra") && _dup=$(cat "$b/cm_rx_duplicates/req") || return 1
	[ "$_mra" -ge 1 ] || { echo "no MRA from rxb"; return 1; }
	[ "$_dup" -ge 2 ] || { echo "$b/cm_rx_duplicates/req: $_dup, want at least 2"; return 1; }
	want "$b/cm_rx_msgs/req" $((28 + _dup)) &&
		want "$b/cm_tx_msgs/rej" 21 && want "$b/cm_tx_msgs/rep" 7 && want "$b/cm_rx_msgs/rtu" 7 && want "$c/cm_rx_msgs/req" 1 && want "$c/cm_tx_msgs/req" 1 &&
		want "$c/cm_tx_msgs/rep" 1 && want "$c/cm_rx_msgs/rep" 1
}

# The module's last case asks for rxa to be removed under its connection.
remove_watch() {
	for _ in $(seq 1200); do
		if dmesg | grep -q "cm: ready for removal of rxa"; then
			echo 0 > "$cfs/rxa/enable"
			return
		fi
		sleep 0.1
	done
}

# A ULP unloaded with its ids alive (a connection and a listener): the
# client's DREQ reaches the server's side, which answers it, and both
# ends and the listener go with the module.
ulp_unloads_with_ids() {
	_dreq=$(cat /sys/class/rdma_rs/rxb/ports/1/cm_rx_msgs/dreq) &&
		modprobe rdma_rxe_cm_ulp && dmesg | grep -q "cm ulp: connected" && rmmod rdma_rxe_cm_ulp || return 1
	[ "$(cat /sys/class/rdma_rs/rxb/ports/1/cm_rx_msgs/dreq)" = $((_dreq + 1)) ] ||
		{ echo "rxb: no DREQ from the unloaded ULP"; return 1; }
}

# udaddy (librdmacm over the kernel's cxc) resolves a UD service (port
# space UDP, port 7174) on our rxc, where nobody listens for it: our CM
# answers the SIDR REQ with a SIDR REP of status UNSUPPORTED (1), as the
# C CM does, and udaddy reports UNREACHABLE with that status at once
# (unanswered, it would retry for about a minute and report -110). The
# kernel's CM counts the SIDR REP it received.
sidr_unsupported() {
	c=/sys/class/rdma_rs/rxc/ports/1 k=/sys/class/infiniband/cxc/ports/1
	q0=$(cat "$c/cm_rx_msgs/sidr_req") && p0=$(cat "$c/cm_tx_msgs/sidr_rep") &&
		k0=$(cat "$k/cm_rx_msgs/sidr_rep") || return 1
	timeout 30 udaddy -s 10.85.0.2 -b 10.85.0.1 > "$tmpd/udaddy.out" 2>&1
	sed 's/^/# udaddy: /' "$tmpd/udaddy.out"
	grep -q "RDMA_CM_EVENT_UNREACHABLE, error: 1$" "$tmpd/udaddy.out" || return 1
	q=$(($(cat "$c/cm_rx_msgs/sidr_req") - q0)) p=$(($(cat "$c/cm_tx_msgs/sidr_rep") - p0))
	k=$(($(cat "$k/cm_rx_msgs/sidr_rep") - k0))
	echo "# rxc: sidr_req $q received, sidr_rep $p sent; cxc: sidr_rep $k received"
	[ "$q" -ge 1 ] && [ "$p" = "$q" ] && [ "$k" -ge 1 ]
}

teardown() {
	rmmod rdma_rxe_cm_test 2>/dev/null
	rmmod rdma_rxe_cm_ulp 2>/dev/null
	rmmod rdma_rxe_cmtools_test 2>/dev/null
	rmmod rxe_cpeer 2>/dev/null
	# rxa is disabled already (the removal case).
	for d in rxa rxb rxc; do echo 0 > "$cfs/$d/enable" 2>/dev/null; rmdir "$cfs/$d" || return 1; done
	rdma link delete cxc && ip link del ci && ip netns del cma && ip netns del cmb && ip netns del cmc &&
		rmmod rdma_rs_rxe && rmmod rdma_core &&
		{ rmmod rdma_ucm rdma_cm iw_cm ib_cm rdma_rxe ib_uverbs 2>/dev/null || true; }
}

ktap_plan
ktap_check "setup" setup
dmesg -c > /dev/null
remove_watch &
watch=$!
cleanup_add kill "$watch"
ktap_check "ulp_unloads_with_ids" ulp_unloads_with_ids
ktap_check "arm_faults" arm_faults
# udaddy's server (librdmacm over the kernel's cxc, UDP port 7174, its
# only one), which the module's SIDR REQ from rxc resolves; it waits for
# messages that never come, and goes after the module.
timeout 600 udaddy -b 10.85.0.1 > "$tmpd/udaddy_srv.out" 2>&1 &
udsrv=$!
cleanup_add kill "$udsrv"
ktap_module rdma_rxe_cm_test
kill "$udsrv" 2>/dev/null
sed 's/^/# udaddy server: /' "$tmpd/udaddy_srv.out"
wait "$watch"
ktap_check "counters" counters
cmtools_start 10.85.0.1 10.85.0.2
ktap_module rdma_rxe_cmtools_test
ktap_check "cmtools_done" cmtools_done
ktap_check "sidr_unsupported" sidr_unsupported
ktap_check "teardown" teardown
ktap_finish
