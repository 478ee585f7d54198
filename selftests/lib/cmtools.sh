#!/bin/sh
# shellcheck disable=SC2154 # tmpd comes from cleanup.sh, sourced first
# rdma-core's rping, rdma_client and rdma_server against our test module
# that speaks their protocols (modules/rdma_rxe_cmtools_test.rs), for cm.sh
# and make run (sourced, after cleanup.sh).
#
#   cmtools_start THEIRS OURS
#       starts `rping -s` on THEIRS (an address of the kernel's rxe, port
#       7175, 100-byte pings) for our client, and `rping -c` to OURS (port
#       7174, five validated pings) once the module says our server
#       listens; and the same for `rdma_server -p 7472` and
#       `rdma_client -s OURS -p 7471`, and `ucmatose -p 7474 -c 3` and
#       `ucmatose -s OURS -p 7473 -c 3`. Each leaves its exit status in a
#       file: the checks run in a subshell, which cannot wait for them.
#   cmtools_done
#       succeeds if both rpings ended well with five pings each, and
#       rdma_client, rdma_server and both ucmatoses ended well; else prints
#       what they printed.
#   cmtools_show
#       prints what they printed.
#   rping_serve ADDRESS PORT / rping_connect ADDRESS PORT
#       rping's server (one client) or client (retried while no server
#       listens, ten minutes at most), five 100-byte pings, verified by the
#       client (-V); succeeds if the tool ended well having printed all five.

# Waits (five minutes at most) for our module's line "$1", then runs the
# rest, writing its output to $tmpd/$2.out and its status to $tmpd/$2.rc.
cmtools_when() {
	_line=$1 _out=$2
	shift 2
	for _ in $(seq 3000); do
		dmesg | grep -q "$_line" && break
		sleep 0.1
	done
	"$@" > "$tmpd/$_out.out" 2>&1
	echo $? > "$tmpd/$_out.rc"
}

cmtools_start() {
	(
		rping -s -a "$1" -p 7175 -S 100 -v > "$tmpd/rping_s.out" 2>&1
		echo $? > "$tmpd/rping_s.rc"
	) &
	_ps=$!
	cmtools_when "rping: listening on 7174" rping_c rping -c -a "$2" -p 7174 -C 5 -S 100 -V -v &
	_pc=$!
	(
		rdma_server -p 7472 > "$tmpd/rdma_server.out" 2>&1
		echo $? > "$tmpd/rdma_server.rc"
	) &
	_rs=$!
	cmtools_when "rdma_server: listening on 7471" rdma_client rdma_client -s "$2" -p 7471 &
	_rc=$!
	(
		ucmatose -p 7474 -c 3 > "$tmpd/ucmatose_s.out" 2>&1
		echo $? > "$tmpd/ucmatose_s.rc"
	) &
	_us=$!
	cmtools_when "ucmatose: listening on 7473" ucmatose_c ucmatose -s "$2" -p 7473 -c 3 &
	cleanup_add kill "$_ps" "$_pc" "$_rs" "$_rc" "$_us" "$!"
}

cmtools_show() {
	sed 's/^/rping -c: /' "$tmpd/rping_c.out"
	sed 's/^/rping -s: /' "$tmpd/rping_s.out"
	sed 's/^/rdma_client: /' "$tmpd/rdma_client.out"
	sed 's/^/rdma_server: /' "$tmpd/rdma_server.out"
	sed 's/^/ucmatose -s: /' "$tmpd/ucmatose_c.out"
	sed 's/^/ucmatose: /' "$tmpd/ucmatose_s.out"
}

cmtools_done() {
	for _ in $(seq 300); do
		[ -f "$tmpd/rping_c.rc" ] && [ -f "$tmpd/rping_s.rc" ] &&
			[ -f "$tmpd/rdma_client.rc" ] && [ -f "$tmpd/rdma_server.rc" ] &&
			[ -f "$tmpd/ucmatose_c.rc" ] && [ -f "$tmpd/ucmatose_s.rc" ] && break
		sleep 0.1
	done
	_uc=$(cat "$tmpd/ucmatose_c.rc" 2>/dev/null)
	_us=$(cat "$tmpd/ucmatose_s.rc" 2>/dev/null)
	_rc=$(cat "$tmpd/rdma_client.rc" 2>/dev/null)
	_rs=$(cat "$tmpd/rdma_server.rc" 2>/dev/null)
	_c=$(cat "$tmpd/rping_c.rc" 2>/dev/null)
	_s=$(cat "$tmpd/rping_s.rc" 2>/dev/null)
	_nc=$(grep -c '^ping data: rdma-ping-' "$tmpd/rping_c.out")
	_ns=$(grep -c '^server ping data: rdma-ping-' "$tmpd/rping_s.out")
	if [ "$_c" != 0 ] || [ "$_s" != 0 ] || [ "$_nc" != 5 ] || [ "$_ns" != 5 ] ||
		[ "$_rc" != 0 ] || [ "$_rs" != 0 ] || [ "$_uc" != 0 ] || [ "$_us" != 0 ]; then
		echo "rping -c: exit $_c, $_nc pings; rping -s: exit $_s, $_ns pings"
		echo "rdma_client: exit $_rc; rdma_server: exit $_rs"
		echo "ucmatose client: exit $_uc; ucmatose server: exit $_us"
		cmtools_show
		return 1
	fi
}

# rping over the guests' network (eth0, 10.77.9.0/24), SIZE-100 pings
# checked by the client (-V); both sides print every ping, and both must
# have printed five. The client retries while the server does not listen.
rping_serve() { # address port
	timeout 900 rping -s -a "$1" -p "$2" -C 5 -S 100 -v > "$tmpd/rping_s" 2>&1
	_rc=$?
	if [ "$_rc" != 0 ] || [ "$(grep -c '^server ping data: rdma-ping-' "$tmpd/rping_s")" != 5 ]; then
		cat "$tmpd/rping_s"
		return 1
	fi
}
rping_connect() { # address port
	_n=0
	until timeout 60 rping -c -a "$1" -p "$2" -C 5 -S 100 -V -v > "$tmpd/rping_c" 2>&1; do
		_n=$((_n + 1))
		[ "$_n" -lt 600 ] || { cat "$tmpd/rping_c"; return 1; }
		sleep 1
	done
	[ "$(grep -c '^ping data: rdma-ping-' "$tmpd/rping_c")" = 5 ] || { cat "$tmpd/rping_c"; return 1; }
}
