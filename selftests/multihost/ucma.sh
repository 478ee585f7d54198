#!/bin/sh
# librdmacm across the two guests, each stack on its own side: guest 0 runs
# our rxe with rdma_rs_uverbs and rdma_rs_ucm (the C ib_core, ib_uverbs and
# rdma_ucm kept from loading), guest 1 the kernel's rdma_rxe with ib_uverbs
# and rdma_ucm; both have unchanged rdma-core 44 and perftest. rping (every
# ping verified), ucmatose (several connections), udaddy (UD ids, SIDR)
# and perftest over rdma_cm (-R) run between them in both directions:
# first the kernel's side serves and ours connects, then ours serves and
# the kernel's connects.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/rxe.sh

ktap_plan
if [ -z "$RDMA_RS_GUEST" ] || ! ip link show eth0 > /dev/null 2>&1; then
	ktap_skip "setup" "not a joined test guest"
	ktap_skip "rping" "not a joined test guest"
	ktap_skip "ucmatose" "not a joined test guest"
	ktap_skip "udaddy" "not a joined test guest"
	ktap_skip "ib_send_lat_cm" "not a joined test guest"
	ktap_skip "ib_write_bw_cm" "not a joined test guest"
	ktap_skip "teardown" "not a joined test guest"
	ktap_finish
fi
me=$((RDMA_RS_GUEST + 1))
addr=10.77.9.$me
peer=10.77.9.$((2 - RDMA_RS_GUEST))
nocore=/etc/modprobe.d/rdma-rs-no-ib-core.conf
if [ "$RDMA_RS_GUEST" = 0 ]; then dev=rxr; else dev=cxr; fi

setup() {
	ip addr show dev eth0 | grep -q "$addr/" || ip addr add "$addr/24" dev eth0 || return 1
	ip link set eth0 up || return 1
	if [ "$RDMA_RS_GUEST" = 0 ]; then
		# librdmacm and libibverbs ask the RDMA netlink family first;
		# opening it would load the C ib_core (see rxe/ucma.sh).
		mkdir -p /etc/modprobe.d
		printf 'install ib_core /bin/false\ninstall ib_uverbs /bin/false\ninstall rdma_ucm /bin/false\n' > "$nocore"
		cleanup_add rm -f "$nocore"
		! grep -q "^ib_core " /proc/modules &&
			modprobe rdma_rs_rxe && modprobe rdma_rs_uverbs && modprobe rdma_rs_ucm &&
			rxe_item_new "$dev" && echo eth0 > "$rxe_cfs/$dev/netdev" &&
			echo 1 > "$rxe_cfs/$dev/enable" || return 1
	else
		modprobe rdma_rxe && modprobe ib_uverbs && modprobe rdma_ucm &&
			c_rxe_add "$dev" eth0 || return 1
	fi
	[ -c /dev/infiniband/rdma_cm ] || { echo "no /dev/infiniband/rdma_cm"; return 1; }
}

# Succeeds once a thread of a process holding /dev/infiniband/rdma_cm
# sleeps in write(2) on it: librdmacm waits for its next event there
# (rdma_get_cm_event), which a server of these tools does once it listens
# (rping's event thread waits there from its start: the short wait after
# this covers its bind and listen, and its client retries a REJECTED).
rdma_cm_waiting() {
	for _fd in /proc/[0-9]*/fd/*; do
		[ "$(readlink "$_fd" 2> /dev/null)" = /dev/infiniband/rdma_cm ] || continue
		_p=${_fd%/fd/*}
		_hex=$(printf '0x%x' "${_fd##*/}")
		for _t in "$_p"/task/*; do
			read -r _nr _a _ < "$_t/syscall" 2> /dev/null || continue
			[ "$_nr" = 1 ] && [ "$_a" = "$_hex" ] && return 0
		done
	done
	return 1
}

# One program, both directions: the kernel's guest serves first. The
# serving side runs PROGRAM ARGS SERVING-ARGS, the connecting side PROGRAM
# ARGS CONNECTING-ARGS once the serving side said its server listens: it
# waits for that (rdma_cm_waiting), then hands the word "go" to the first
# TCP connection on SYNC-PORT (+1 on the second turn), which the
# connecting side tries for 200 s at most (the other guest may still be
# in an earlier check). Without it a client of several connections
# (ucmatose -c) could start them while the server began to listen: the
# first refused, the client gave up, the later ones were accepted and
# the server waited in vain. A refusal or an unanswered request still
# seen is retried for 30 s (rping's, above; perftest names the events by
# their numbers, 7 and 8).
both_ways() { # check sync-port "serving-args" "connecting-args" program args...
	_check=$1 _sync=$2 _sa=$3 _ca=$4
	shift 4
	for _turn in 1 0; do
		_sp=$((_sync + 1 - _turn))
		if [ "$RDMA_RS_GUEST" = "$_turn" ]; then
			_role=serving
			# shellcheck disable=SC2086 # the role's arguments, one word each
			timeout 120 "$@" $_sa > "$tmpd/out" 2>&1 &
			_pid=$!
			_n=0
			until rdma_cm_waiting; do
				_n=$((_n + 1))
				if [ "$_n" -ge 300 ] || ! kill -0 "$_pid" 2> /dev/null; then
					echo "the server did not listen"
					kill "$_pid" 2> /dev/null
					wait "$_pid"
					sed "s/^/    # serving ($1): /" "$tmpd/out"
					return 1
				fi
				sleep 0.2
			done
			sleep 1
			echo go | timeout 200 nc -l -p "$_sp" > /dev/null ||
				echo "the connecting side never asked whether the server listens"
			wait "$_pid" || { sed "s/^/    # serving ($1): /" "$tmpd/out"; return 1; }
		else
			_role=connecting
			_end=$(($(_ktap_now) + 200))
			until [ "$(timeout 5 nc "$peer" "$_sp" < /dev/null 2> /dev/null)" = go ]; do
				if [ "$(_ktap_now)" -ge "$_end" ]; then
					echo "the serving side never said its server listens"
					return 1
				fi
				sleep 0.5
			done
			_end=$(($(_ktap_now) + 30))
			# shellcheck disable=SC2086 # the role's arguments, one word each
			until timeout 120 "$@" $_ca > "$tmpd/out" 2>&1; do
				if [ "$(_ktap_now)" -ge "$_end" ] ||
					! grep -Eqi "REJECTED|UNREACHABLE|Unexpected CM event bl blka [78]$" "$tmpd/out"; then
					sed "s/^/    # connecting ($1): /" "$tmpd/out"
					return 1
				fi
				sleep 0.2
			done
		fi
		"$_check" "$tmpd/out" "$_role" || { sed "s/^/    # $_role ($1): /" "$tmpd/out"; return 1; }
	done
}

# rping: every ping verified by the client (-V) and printed by both sides;
# the server serves one client and exits.
rping_n=10
rping_ok() { # file role
	if [ "$2" = serving ]; then
		_n=$(grep -c '^server ping data: rdma-ping-' "$1")
	else
		_n=$(grep -c '^ping data: rdma-ping-' "$1")
	fi
	[ "$_n" = "$rping_n" ] || { echo "$2 side printed $_n pings of $rping_n"; return 1; }
}
# ucmatose: every connection made, messages both ways on each, then
# disconnected; both sides end with "test complete".
ucmatose_ok() { grep -q "test complete" "$1"; }
# udaddy: UD ids by SIDR, every datagram both ways waited for by both
# sides.
udaddy_ok() { grep -q "data transfers complete" "$1"; }
# perftest: all N iterations done, on each side. The serving side of a
# write test prints the figures its client measured.
perftest_ok() { # file role
	if [ "$2" = serving ]; then
		perftest_completed "$1" "$perftest_n" row
	else
		perftest_completed "$1" "$perftest_n"
	fi
}
perftest_cm() { # N port program args...
	perftest_n=$1 _port=$2
	shift 2
	both_ways perftest_ok "$((_port + 100))" "" "$peer" "$@" -d "$dev" -R -p "$_port" -n "$perftest_n" -F
}

teardown() {
	if [ "$RDMA_RS_GUEST" = 0 ]; then
		rxe_item_remove "$dev" && rmmod rdma_rs_ucm && rmmod rdma_rs_uverbs &&
			rmmod rdma_rs_rxe && rmmod rdma_core
	else
		rdma link delete "$dev" && modprobe -r rdma_ucm && modprobe -r rdma_rxe ib_uverbs
	fi
}

ktap_check "setup" setup
ktap_check "rping" both_ways rping_ok 7281 "-s -a $addr" "-c -a $peer -V" rping -p 7181 -S 4096 -C "$rping_n" -v
ktap_check "ucmatose" both_ways ucmatose_ok 7283 "-b $addr" "-s $peer" ucmatose -p 7183 -c 3 -C 5
ktap_check "udaddy" both_ways udaddy_ok 7285 "-b $addr" "-s $peer -b $addr" udaddy -c 2 -C 5
ktap_check "ib_send_lat_cm" perftest_cm 100 18531 ib_send_lat
ktap_check "ib_write_bw_cm" perftest_cm 100 18533 ib_write_bw -s 16384
# Stay up a little so the other guest's last exchange ends too.
sleep 3
ktap_check "teardown" teardown
ktap_finish
