#!/bin/sh
# Recovery from loss, reordering, duplication and corruption, with our
# devices' fault injection (their configfs `fault` file): rxa (10.78.3.1)
# and rxb (10.78.3.2), each in its own namespace on one end of a veth pair.
#
# First the deterministic cases of modules/rdma_rxe_fault_test.rs: one
# chosen packet of each case is lost, held back or doubled (one-time
# faults armed on the PSNs the cases use), and the counters must show the
# recovery each needed. Then the soak of modules/rdma_rxe_soak_test.rs
# under random faults on both devices at once.
. ../lib/rxe_pair.sh

setup() {
	rxe_pair fla fa flb fb 10.78.3
}

# The fault language: what is refused, and what reads back.
fault_spec() {
	! echo "tx_drop=101" > "$rxe_cfs/rxa/fault" 2>/dev/null &&
		! echo "tx_fly=1" > "$rxe_cfs/rxa/fault" 2>/dev/null &&
		! echo "rx_drop=60 rx_dup=50" > "$rxe_cfs/rxa/fault" 2>/dev/null &&
		! echo "hit=tx_drop@psn=0x1000000" > "$rxe_cfs/rxa/fault" 2>/dev/null &&
		echo "seed=9 tx_drop=1.5 hit=rx_dup@nth=4" > "$rxe_cfs/rxa/fault" &&
		[ "$(head -1 "$rxe_cfs/rxa/fault")" = "seed=9 tx_drop=1.5000 hit=rx_dup@nth=4" ] &&
		echo off > "$rxe_cfs/rxa/fault" && [ "$(head -1 "$rxe_cfs/rxa/fault")" = off ] &&
		mkdir "$rxe_cfs/idle" && ! echo "tx_drop=1" > "$rxe_cfs/idle/fault" 2>/dev/null &&
		rmdir "$rxe_cfs/idle"
}

# The one-time faults of rdma_rxe_fault_test's cases (see its table).
arm() {
	echo "hit=rx_drop@psn=0x100003 hit=tx_drop@psn=0x500000" \
		"hit=rx_reorder@psn=0x600001 hit=rx_dup@psn=0x700002" > "$rxe_cfs/rxb/fault" &&
		echo "hit=rx_drop@psn=0x200000 hit=rx_drop@psn=0x300001" \
			"hit=rx_drop@psn=0x400002" > "$rxe_cfs/rxa/fault"
}

# Every armed fault fired, each counted once, and the recovery shows:
# sequence NAKs sent and received for the lost and the reordered request,
# duplicates answered (READs asked again, the replayed atomic, the doubled
# and the go-back-N copies), a timeout for the lost atomic ACK, RNR NAKs
# waited out and RNR and transport retries exhausted.
recovered() {
	if ! { grep -qx "hits_pending 0" "$rxe_cfs/rxa/fault" &&
		grep -qx "hits_pending 0" "$rxe_cfs/rxb/fault" &&
		[ "$(rxe_counter rxa fault_rx_drop)" = 3 ] && [ "$(rxe_counter rxb fault_rx_drop)" = 1 ] &&
		[ "$(rxe_counter rxb fault_tx_drop)" = 1 ] && [ "$(rxe_counter rxb fault_rx_reorder)" = 1 ] &&
		[ "$(rxe_counter rxb fault_rx_dup)" = 1 ] &&
		[ "$(rxe_counter rxa rcvd_seq_err)" -ge 2 ] && [ "$(rxe_counter rxb out_of_seq_request)" -ge 2 ] &&
		[ "$(rxe_counter rxb duplicate_request)" -ge 4 ] &&
		[ "$(rxe_counter rxa completer_retry_err)" -ge 3 ] && [ "$(rxe_counter rxa timeouts)" -ge 1 ] &&
		[ "$(rxe_counter rxa rcvd_rnr_err)" -ge 2 ] &&
		[ "$(rxe_counter rxa retry_rnr_exceeded_err)" = 1 ] &&
		[ "$(rxe_counter rxa retry_exceeded_err)" = 1 ]; }; then
		cat "$rxe_cfs/rxa/fault" "$rxe_cfs/rxb/fault"
		rxe_counters_show rxa rxb
		return 1
	fi
}

disarm() {
	echo off > "$rxe_cfs/rxa/fault" && echo off > "$rxe_cfs/rxb/fault"
}

# The sum of a counter over both devices.
both() {
	echo $(($(rxe_counter rxa "$1") + $(rxe_counter rxb "$1")))
}

# Runs rdma_rxe_soak_test under the faults SPEC on both devices (each its
# own seed); NAME's summary goes to $tmpd/NAME. Then every counter named
# in MOVED (over both devices) must have grown.
soak() { # NAME "SPEC" "MOVED..."
	_name=$1 _spec=$2 _moved=$3
	echo "seed=11 $_spec" > "$rxe_cfs/rxa/fault" && echo "seed=22 $_spec" > "$rxe_cfs/rxb/fault" ||
		return 1
	for c in $_moved; do eval "_before_$c=$(both "$c")"; done
	_t0=$(both timeouts) _r0=$(both completer_retry_err)
	dmesg -c > /dev/null
	if modprobe rdma_rxe_soak_test; then _ok=1; else _ok=0; fi
	rmmod rdma_rxe_soak_test 2>/dev/null
	echo off > "$rxe_cfs/rxa/fault" && echo off > "$rxe_cfs/rxb/fault"
	dmesg | sed -n 's/^.*: ktap: /    /p; s/^.*rdma_rxe_soak_test: \(soak\|ud\): /# \1: /p' \
		> "$tmpd/$_name"
	cat "$tmpd/$_name"
	[ "$_ok" = 1 ] || return 1
	for c in $_moved; do
		eval "_b=\$_before_$c"
		# shellcheck disable=SC2154 # set by the eval above
		[ "$(both "$c")" -gt "$_b" ] || { echo "$c did not grow"; rxe_counters_show rxa rxb; return 1; }
	done
	echo "# $_name: $(grep -h '^#' "$tmpd/$_name" | tr '\n' ' ')" \
		"timeouts $(($(both timeouts) - _t0)) retries $(($(both completer_retry_err) - _r0))" \
		> "$tmpd/$_name.summary"
}

# Loss (every retransmission path), then everything else a network does.
loss="completer_retry_err rcvd_seq_err out_of_seq_request rcvd_rnr_err fault_tx_drop"
mixed="fault_tx_dup fault_tx_reorder fault_tx_corrupt fault_rx_drop fault_rx_dup"
mixed="$mixed fault_rx_reorder fault_rx_corrupt rx_drop_malformed completer_retry_err"
soak_1() { soak loss_1 "tx_drop=1" "$loss"; }
soak_5() { soak loss_5 "tx_drop=5" "$loss"; }
# At 20 % loss an RNR NAK of the soak's few is as likely to be lost as any
# packet, and its retransmission may find the receive posted by then:
# rcvd_rnr_err need not grow (a run where all were lost failed here).
soak_20() { soak loss_20 "tx_drop=20" "$(echo "$loss" | sed 's/ rcvd_rnr_err//')"; }
soak_mixed() {
	soak mixed "tx_dup=2 tx_reorder=2 tx_corrupt=1 rx_drop=1 rx_dup=1 rx_reorder=2 rx_corrupt=1" \
		"$mixed"
}
# Over all of them: duplicates were answered as duplicates.
soak_duplicates() {
	[ "$(both duplicate_request)" -gt 0 ] || { rxe_counters_show rxa rxb; return 1; }
}

teardown() {
	rxe_pair_teardown fla flb
}

ktap_plan
ktap_check "setup" setup
ktap_check "fault_spec" fault_spec
ktap_check "arm" arm
ktap_module rdma_rxe_fault_test
rmmod rdma_rxe_fault_test 2>/dev/null
ktap_check "recovered" recovered
echo "# $(rxe_counters_show rxa rxb | tr '\n' ' ')"
ktap_check "disarm" disarm
ktap_check "soak_loss_1" soak_1
ktap_check "soak_loss_5" soak_5
ktap_check "soak_loss_20" soak_20
ktap_check "soak_mixed" soak_mixed
ktap_check "soak_duplicates" soak_duplicates
cat "$tmpd"/*.summary 2>/dev/null
ktap_check "teardown" teardown
ktap_finish
