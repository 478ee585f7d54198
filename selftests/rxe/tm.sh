#!/bin/sh
# Tag matching (issue 27, Documentation/tag_matching.rst): rxa (10.78.8.1)
# and rxb (10.78.8.2), each in its own namespace on one end of a veth
# pair. modules/rdma_rxe_tm_test.rs runs rdma-core's four tag-matching
# cases and the rest of the issue's list, each on loopback and across the
# pair; its SENDs without a valid TM header must be counted in
# tm_bad_header. Then modules/rdma_rxe_tm_faults_test.rs sends tagged
# traffic (eager and rendezvous) under loss, duplication and reordering
# on both devices: every message matched once, so tm_matched grows by
# exactly its number of messages and tm_unexpected not at all.
. ../lib/rxe_pair.sh

setup() {
	rxe_pair tma ta tmb tb 10.78.8
}

# The sum of a counter over both devices.
both() {
	echo $(($(rxe_counter rxa "$1") + $(rxe_counter rxb "$1")))
}

# Loads MODULE and lifts its KTAP lines and its messages into the output.
load() { # MODULE
	dmesg -c > /dev/null
	if modprobe "$1"; then _ok=1; else _ok=0; fi
	rmmod "$1" 2>/dev/null
	dmesg | sed -n "s/^.*: ktap: /    /p; s/^.*$1: /# /p"
	[ "$_ok" = 1 ]
}

cases() {
	_bad=$(both tm_bad_header)
	load rdma_rxe_tm_test || { rxe_counters_show rxa rxb; return 1; }
	# Five refused headers, on loopback and across the pair.
	[ "$(both tm_bad_header)" -eq $((_bad + 10)) ] ||
		{ echo "tm_bad_header: $_bad, then $(both tm_bad_header)"; return 1; }
}

faulty() {
	_m=$(rxe_counter rxb tm_matched) _u=$(rxe_counter rxb tm_unexpected)
	echo "seed=11 tx_drop=2 rx_dup=2 rx_reorder=2" > "$rxe_cfs/rxa/fault" &&
		echo "seed=12 tx_drop=2 rx_dup=2 rx_reorder=2" > "$rxe_cfs/rxb/fault" || return 1
	if load rdma_rxe_tm_faults_test; then _ok=1; else _ok=0; fi
	echo off > "$rxe_cfs/rxa/fault" && echo off > "$rxe_cfs/rxb/fault"
	echo "# $(rxe_counters_show rxa rxb | tr '\n' ' ')"
	[ "$_ok" = 1 ] || return 1
	[ "$(rxe_counter rxb tm_matched)" -eq $((_m + 60)) ] ||
		{ echo "tm_matched: $_m, then $(rxe_counter rxb tm_matched)"; return 1; }
	[ "$(rxe_counter rxb tm_unexpected)" -eq "$_u" ] ||
		{ echo "tm_unexpected moved"; return 1; }
	# The faults were met.
	[ "$(both fault_tx_drop)" -gt 0 ] && [ "$(both duplicate_request)" -gt 0 ]
}

teardown() {
	rxe_pair_teardown tma tmb
}

ktap_plan
ktap_check "setup" setup
ktap_check "tm_cases" cases
ktap_check "tm_faulty" faulty
ktap_check "teardown" teardown
ktap_finish
