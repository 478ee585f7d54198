#!/bin/sh
# UD between two rdma_rs_rxe devices on the wire, over IPv4 and IPv6: rxa
# (10.78.0.1, fd00:78::1) and rxb (10.78.0.2, fd00:78::2), each bound in its
# own network namespace to one end of a veth pair; the traffic is run by
# modules/rdma_rxe_ud_test.rs.
. ../lib/rxe_pair.sh

setup() {
	rxe_pair uda ua udb ub 10.78.0 fd00:78
}

counters_add_up() {
	# rxa sent 7 + 1 (the last with a wrong Q_Key, which rxb dropped); rxb
	# received those 7 and 1 from itself by the loopback path.
	if ! { [ "$(rxe_counter rxb loopback_packets)" = 1 ] && [ "$(rxe_counter rxa tx_packets)" -ge 8 ] &&
		[ "$(rxe_counter rxb rx_packets)" -ge 8 ] && [ "$(rxe_counter rxb rx_dropped)" -ge 1 ]; }; then
		rxe_counters_show rxa rxb
		return 1
	fi
}

# too_long_for_recv sent two datagrams longer than their receives to rxb:
# each counted as a length error (and a drop).
length_counted() {
	[ "$(rxe_counter rxb length_err)" = 2 ] || { rxe_counters_show rxb; return 1; }
}

cm_counters_in_sysfs() {
	# The module's cm_unknown sent one REQ and one DREQ from rxa to rxb:
	# rxb's CM received them and answered with a REJ and a DREP, which
	# rxa's CM received; nothing else used the CMs.
	a=/sys/class/rdma_rs/rxa/ports/1
	b=/sys/class/rdma_rs/rxb/ports/1
	for f in "$b/cm_rx_msgs/req" "$b/cm_rx_msgs/dreq" "$b/cm_tx_msgs/rej" "$b/cm_tx_msgs/drep" \
		"$a/cm_rx_msgs/rej" "$a/cm_rx_msgs/drep"; do
		v=$(cat "$f") || return 1
		[ "$v" = 1 ] || { echo "$f: $v, not 1"; return 1; }
	done
	# The DREQ for no connection is also a duplicate, as the C CM counts it.
	[ "$(cat "$b/cm_rx_duplicates/dreq")" = 1 ] || { echo "$b/cm_rx_duplicates/dreq not 1"; return 1; }
	for f in "$a/cm_tx_msgs/rej" "$b/cm_rx_msgs/rep" "$a/cm_tx_retries/req" "$b/cm_rx_duplicates/req"; do
		v=$(cat "$f") || return 1
		[ "$v" = 0 ] || { echo "$f: $v, not 0"; return 1; }
	done
}

teardown() {
	rxe_pair_teardown uda udb
}

ktap_plan
ktap_check "setup" setup
ktap_module rdma_rxe_ud_test
rmmod rdma_rxe_ud_test 2>/dev/null
ktap_check "counters_add_up" counters_add_up
ktap_check "length_counted" length_counted
ktap_check "cm_counters_in_sysfs" cm_counters_in_sysfs
ktap_check "teardown" teardown
ktap_finish
