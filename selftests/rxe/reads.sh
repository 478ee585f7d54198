#!/bin/sh
# Many RDMA READs in flight within the READ limits (issue 24, where our
# requester tripped our responder's limit under `make bench`): rxa
# (10.78.7.1) and rxb (10.78.7.2), each in its own namespace on one end of
# a veth pair. modules/rdma_rxe_reads_test.rs keeps 64 READs posted with
# max_rd_atomic and max_dest_rd_atomic 16, small ones and then mixed sizes,
# every byte checked; it runs on a clean path, then under loss,
# duplication and reordering on both devices. No READ may be refused as
# beyond the responder's resources (rd_atomic_exceeded), and on the clean
# path nothing may be sent again (completer_retry_err, timeouts).
. ../lib/rxe_pair.sh

setup() {
	rxe_pair rla la rlb lb 10.78.7
}

# The sum of a counter over both devices.
both() {
	echo $(($(rxe_counter rxa "$1") + $(rxe_counter rxb "$1")))
}

# Loads rdma_rxe_reads_test with SPEC in both devices' fault files (each
# its own seed; "off": none), then checks the counters: rd_atomic_exceeded
# stays, and so do the counters in STILL; those in MOVED grow.
reads() { # NAME SPEC "STILL..." "MOVED..."
	_name=$1 _spec=$2 _still="rd_atomic_exceeded $3" _moved=$4
	if [ "$_spec" = off ]; then
		echo off > "$rxe_cfs/rxa/fault" && echo off > "$rxe_cfs/rxb/fault"
	else
		echo "seed=7 $_spec" > "$rxe_cfs/rxa/fault" && echo "seed=8 $_spec" > "$rxe_cfs/rxb/fault"
	fi || return 1
	for c in $_still $_moved; do eval "_before_$c=$(both "$c")"; done
	dmesg -c > /dev/null
	if modprobe rdma_rxe_reads_test; then _ok=1; else _ok=0; fi
	rmmod rdma_rxe_reads_test 2>/dev/null
	echo off > "$rxe_cfs/rxa/fault" && echo off > "$rxe_cfs/rxb/fault"
	dmesg | sed -n 's/^.*: ktap: /    /p; s/^.*rdma_rxe_reads_test: /# /p' > "$tmpd/$_name"
	cat "$tmpd/$_name"
	[ "$_ok" = 1 ] || { rxe_counters_show rxa rxb; return 1; }
	_bad=0
	for c in $_still; do
		eval "_b=\$_before_$c"
		# shellcheck disable=SC2154 # set by the eval above
		[ "$(both "$c")" = "$_b" ] || { echo "$c moved from $_b to $(both "$c")"; _bad=1; }
	done
	for c in $_moved; do
		eval "_b=\$_before_$c"
		[ "$(both "$c")" -gt "$_b" ] || { echo "$c did not grow"; _bad=1; }
	done
	[ "$_bad" = 0 ] || { rxe_counters_show rxa rxb; return 1; }
	grep -h '^# reads:' "$tmpd/$_name" > "$tmpd/$_name.summary"
}

clean() {
	reads clean off "completer_retry_err timeouts rcvd_seq_err out_of_seq_request" ""
}

# Requests and responses lost, doubled and held back: READs are asked for
# again (whole and from the middle of their response), and the responder
# sees duplicates of READs it has answered.
faulty() {
	reads faulty "tx_drop=1 rx_dup=2 rx_reorder=1" "" \
		"completer_retry_err duplicate_request fault_tx_drop fault_rx_dup"
}

teardown() {
	rxe_pair_teardown rla rlb
}

ktap_plan
ktap_check "setup" setup
ktap_check "reads_clean" clean
ktap_check "reads_faulty" faulty
cat "$tmpd"/*.summary 2>/dev/null
echo "# $(rxe_counters_show rxa rxb | tr '\n' ' ')"
ktap_check "teardown" teardown
ktap_finish
