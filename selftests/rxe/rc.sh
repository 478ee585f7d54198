#!/bin/sh
# RC and UC between two rdma_rs_rxe devices on the wire and within one
# device (loopback): rxa (10.78.1.1, fd00:79::1) and rxb (10.78.1.2,
# fd00:79::2), each bound in its own network namespace to one end of a veth
# pair; the traffic is run by modules/rdma_rxe_rc_test.rs.
. ../lib/rxe_pair.sh

setup() {
	rxe_pair rca ra rcb rb 10.78.1 fd00:79
}

# The loopback cases' packets went without frames (rxe/net/xmit.rs): all
# of them, as no fault is armed; and most of those of long messages went
# in runs (rxe/transport/req.rs, send_run: all_ops_loopback moves messages
# of up to 1 MiB, 256 packets each), so the cases above checked their
# bytes, completions and statuses through runs too.
loopback_direct() {
	if ! { [ "$(rxe_counter rxa loopback_direct)" -ge 1000 ] &&
		[ "$(rxe_counter rxa loopback_run)" -ge 1000 ] &&
		[ "$(rxe_counter rxa loopback_run)" -lt "$(rxe_counter rxa loopback_direct)" ] &&
		[ "$(rxe_counter rxa loopback_direct)" = "$(rxe_counter rxa loopback_packets)" ] &&
		[ "$(rxe_counter rxb loopback_direct)" = "$(rxe_counter rxb loopback_packets)" ]; }; then
		rxe_counters_show rxa rxb
		return 1
	fi
}

# The cases once more with a fault armed on both devices, one that never
# fires (the 4-billionth packet sent from now): armed, it keeps every
# packet in a frame, the loopback ones too, as faults act on frames (and
# so none goes in a run).
armed_again() {
	d0=$(rxe_counter rxa loopback_direct) l0=$(rxe_counter rxa loopback_packets)
	r0=$(rxe_counter rxa loopback_run)
	for d in rxa rxb; do echo "hit=tx_drop@nth=4000000000" > "$rxe_cfs/$d/fault" || return 1; done
	dmesg -c > /dev/null
	modprobe rdma_rxe_rc_test
	rc=$?
	rmmod rdma_rxe_rc_test 2>/dev/null
	dmesg | sed -n 's/^.*: ktap: \(not ok.*\)/# \1/p'
	if ! { [ "$rc" = 0 ] && grep -qx "hits_pending 1" "$rxe_cfs/rxa/fault" &&
		grep -qx "hits_pending 1" "$rxe_cfs/rxb/fault" &&
		[ "$(rxe_counter rxa loopback_direct)" = "$d0" ] &&
		[ "$(rxe_counter rxa loopback_run)" = "$r0" ] &&
		[ "$(rxe_counter rxa loopback_packets)" -ge $((l0 + 1000)) ]; }; then
		rxe_counters_show rxa rxb
		return 1
	fi
}

# The RNR and timeout cases made the counters move (and uc_too_long's two
# messages longer than their receive, length_err); packets crossed the
# wire both ways and the loopback cases stayed off it.
counters_moved() {
	if ! { [ "$(rxe_counter rxa rcvd_rnr_err)" -ge 1 ] && [ "$(rxe_counter rxb send_rnr_err)" -ge 1 ] &&
		[ "$(rxe_counter rxa timeouts)" -ge 1 ] && [ "$(rxe_counter rxa completer_retry_err)" -ge 1 ] &&
		[ "$(rxe_counter rxa retry_rnr_exceeded_err)" -ge 1 ] &&
		[ "$(rxe_counter rxa retry_exceeded_err)" -ge 1 ] &&
		[ "$(rxe_counter rxa rdma_sends)" -ge 1 ] && [ "$(rxe_counter rxb rdma_recvs)" -ge 1 ] &&
		[ "$(rxe_counter rxb rx_drop_qp)" -ge 1 ] && [ "$(rxe_counter rxb length_err)" -ge 2 ] &&
		[ "$(rxe_counter rxa tx_packets)" -ge 1000 ] && [ "$(rxe_counter rxb tx_packets)" -ge 1000 ] &&
		[ "$(rxe_counter rxa loopback_packets)" -ge 1000 ]; }; then
		rxe_counters_show rxa rxb
		return 1
	fi
}

# The same counters under the C rxe's names in sysfs: every name of the C
# driver's hw_counters is there, and a quiet counter reads as in configfs.
hw_counters() {
	hw=/sys/class/rdma_rs/rxa/ports/1/hw_counters
	for n in sent_pkts rcvd_pkts duplicate_request out_of_seq_request rcvd_rnr_err \
		send_rnr_err rcvd_seq_err ack_deferred retry_exceeded_err retry_rnr_exceeded_err \
		completer_retry_err send_err link_downed rdma_sends rdma_recvs; do
		[ -r "$hw/$n" ] || { echo "no $hw/$n"; return 1; }
	done
	[ "$(cat "$hw/rcvd_rnr_err")" = "$(rxe_counter rxa rcvd_rnr_err)" ] &&
		[ "$(cat "$hw/rx_drop_qp")" = "$(rxe_counter rxa rx_drop_qp)" ] &&
		[ "$(cat "$hw/sent_pkts")" -ge "$(rxe_counter rxa tx_packets)" ]
}

teardown() {
	echo off > "$rxe_cfs/rxa/fault" && echo off > "$rxe_cfs/rxb/fault" && rxe_pair_teardown rca rcb
}

ktap_plan
ktap_check "setup" setup
ktap_module rdma_rxe_rc_test
rmmod rdma_rxe_rc_test 2>/dev/null
ktap_check "counters_moved" counters_moved
ktap_check "hw_counters" hw_counters
ktap_check "loopback_direct" loopback_direct
ktap_check "loopback_frames_when_armed" armed_again
rxe_counters_show rxa rxb | sed 's/^/# /'
ktap_check "teardown" teardown
ktap_finish
