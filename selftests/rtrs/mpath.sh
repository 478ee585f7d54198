#!/bin/sh
# Our RTRS client and our RTRS server over two paths, and faults under IO.
# The server is rtrs_rnbd_srv_test.ko in namespace rt_b (our rxe rtb on
# rtv7, 10.80.4.2, and rtn on rtv9, 10.80.5.2); the client is
# rtrs_mpath_test.ko in namespace rt_m (rtm1 on rtv6, 10.80.4.1, and rtm2 on
# rtv8, 10.80.5.1). The module's cases check the policies; then it leaves a
# load running (rounds of writes read back and compared) and logs
# "rtrs mpath: R rounds, E IO errors, M mismatches, F failovers, up U".
# Under that load: a path's link goes down (its IO fails over, no IO fails)
# and up (it reconnects); the server's side of a path goes down and up;
# the server module is reloaded (IO fails while no path is up, the client
# reconnects both paths and the load opens the device again); a client
# rxe device is removed and added again; the client module is unloaded
# under IO. Mismatches are never allowed. The client's sysfs is read and
# written as the kernel's rtrs-client is: policy, attempts, counters, and a
# path disconnected, reconnected, removed and added. The server's sysfs is
# read and written as the kernel's rtrs-server is: the session and its two
# paths, their devices and addresses, their counters, and a path
# disconnected by the server (the client reconnects it).
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

setup() {
	modprobe rdma_rs_rxe && netns_add rt_m && netns_add rt_b &&
		netns_veth rt_m rtv6 rt_b rtv7 && netns_veth rt_m rtv8 rt_b rtv9 &&
		netns_addr rt_m rtv6 10.80.4.1/24 && netns_addr rt_b rtv7 10.80.4.2/24 &&
		netns_addr rt_m rtv8 10.80.5.1/24 && netns_addr rt_b rtv9 10.80.5.2/24 &&
		rxe_bind rt_m rtv6 rtm1 && rxe_bind rt_m rtv8 rtm2 &&
		rxe_bind rt_b rtv7 rtb && rxe_bind rt_b rtv9 rtn &&
		ip netns exec rt_m ping -c 1 -W 5 10.80.4.2 > /dev/null &&
		ip netns exec rt_m ping -c 1 -W 5 10.80.5.2 > /dev/null &&
		modprobe rtrs_rnbd_srv_test
}

# The load's last report: "rounds errors mismatches failovers up".
report() {
	dmesg | sed -n 's/.*rtrs mpath: \([0-9]*\) rounds, \([0-9]*\) IO errors, \([0-9]*\) mismatches, \([0-9]*\) failovers, up \([0-9]*\)$/\1 \2 \3 \4 \5/p' |
		tail -n 1
}

# Waits up to SECS for a log line matching PATTERN.
wait_log() {
	end=$(($(cut -d. -f1 /proc/uptime) + $2))
	while [ "$(cut -d. -f1 /proc/uptime)" -lt "$end" ]; do
		dmesg | grep -q "$1" && return 0
		sleep 0.2
	done
	echo "no \"$1\" in $2 s"
	dmesg | grep -E "rtrs|rnbd" | tail -n 20
	return 1
}

# Waits up to SECS for a report with at least ROUNDS more rounds than the
# first report from now, UP paths up, and no IO error since; mismatches
# must be 0.
advance() {
	dmesg -c > /dev/null
	base=
	for _ in $(seq 300); do
		base=$(report)
		[ -n "$base" ] && break
		sleep 0.1
	done
	[ -n "$base" ] || { echo "the load reports nothing"; return 1; }
	read -r r0 e0 _ <<-EOF
	$base
	EOF
	end=$(($(cut -d. -f1 /proc/uptime) + $3))
	while [ "$(cut -d. -f1 /proc/uptime)" -lt "$end" ]; do
		read -r r e m f u <<-EOF
		$(report)
		EOF
		[ "$m" -eq 0 ] || { echo "mismatches: $m"; return 1; }
		if [ "$r" -ge $((r0 + $1)) ] && [ "$u" -eq "$2" ] && [ "$e" -eq "$e0" ]; then
			echo "# $r rounds, $e IO errors, $f failovers, $u up"
			return 0
		fi
		sleep 0.5
	done
	echo "the load did not advance: $(report) (from $base)"
	dmesg | grep -E "rtrs|rnbd" | tail -n 20
	return 1
}

load_runs() {
	advance 2 2 60
}

cls=/sys/class/rdma_rs_rtrs_client/rdma_rs_mpath
p0=$cls/paths/ip:10.80.4.1@ip:10.80.4.2
p1=$cls/paths/ip:10.80.5.1@ip:10.80.5.2

# The client's sysfs: the kernel's rtrs-client layout and texts, under
# our class.
sysfs_layout() {
	if [ ! -d "$p0" ] || [ ! -d "$p1" ]; then
		ls -R /sys/class/rdma_rs_rtrs_client
		return 1
	fi
	[ "$(cat "$cls/mpath_policy")" = "min-inflight (MI: 1)" ] &&
		[ "$(cat "$cls/max_reconnect_attempts")" = "-1" ] &&
		[ "$(cat "$p0/state")" = connected ] && [ "$(cat "$p1/state")" = connected ] &&
		[ "$(cat "$p0/hca_name")" = rtm1 ] && [ "$(cat "$p1/hca_name")" = rtm2 ] &&
		[ "$(cat "$p0/src_addr")" = ip:10.80.4.1 ] && [ "$(cat "$p0/dst_addr")" = ip:10.80.4.2 ] &&
		[ "$(cat "$p1/hca_port")" = 1 ] &&
		grep -qE '^[0-9]+ ns$' "$p0/cur_latency" &&
		[ "$(cat "$p0/reconnect")" = "Usage: echo 1 > reconnect" ] || return 1
	# The policy and the attempts are written as the kernel's are; bad
	# values are refused and change nothing.
	echo round-robin > "$cls/mpath_policy" &&
		[ "$(cat "$cls/mpath_policy")" = "round-robin (RR: 0)" ] &&
		echo 1 > "$cls/mpath_policy" &&
		[ "$(cat "$cls/mpath_policy")" = "min-inflight (MI: 1)" ] || return 1
	if echo fastest > "$cls/mpath_policy" 2> /dev/null; then echo "a bad policy taken"; return 1; fi
	if echo 10000 > "$cls/max_reconnect_attempts" 2> /dev/null; then echo "10000 taken"; return 1; fi
	echo 50 > "$cls/max_reconnect_attempts" && [ "$(cat "$cls/max_reconnect_attempts")" = 50 ] &&
		echo -1 > "$cls/max_reconnect_attempts" || return 1
	# Both paths carry IO: reads, bytes, writes, bytes, in flight, failovers.
	read -r r0 _ w0 _ < "$p0/stats/rdma" && read -r r1 _ w1 _ < "$p1/stats/rdma" &&
		echo "# rdma: path 0 $r0 reads $w0 writes, path 1 $r1 reads $w1 writes" &&
		[ "$r0" -gt 0 ] && [ "$w0" -gt 0 ] && [ "$r1" -gt 0 ] && [ "$w1" -gt 0 ] &&
		echo 1 > "$p1/stats/reset_all" && read -r r1b _ < "$p1/stats/rdma" && [ "$r1b" -lt "$r1" ]
}

srv=/sys/class/rdma_rs_rtrs_server/rdma_rs_mpath
sp0=$srv/paths/ip:10.80.4.1@ip:10.80.4.2
sp1=$srv/paths/ip:10.80.5.1@ip:10.80.5.2

# The server's sysfs: the kernel's rtrs-server layout and texts, under our
# class. The client session's directory holds its two paths, each named
# <client address>@<server address>, with the device and port it came on,
# both addresses and its requests counted (reads, bytes, writes, bytes),
# growing under the load; 1 resets the counters, 0 is refused.
server_sysfs() {
	if [ ! -d "$sp0" ] || [ ! -d "$sp1" ]; then
		ls -R /sys/class/rdma_rs_rtrs_server
		return 1
	fi
	set -- "$srv/paths"/*
	[ $# -eq 2 ] || { echo "paths: $*"; return 1; }
	if [ "$(cat "$sp0/hca_name")" != rtb ] || [ "$(cat "$sp1/hca_name")" != rtn ] ||
		[ "$(cat "$sp0/hca_port")" != 1 ] || [ "$(cat "$sp1/hca_port")" != 1 ] ||
		[ "$(cat "$sp0/src_addr")" != ip:10.80.4.1 ] ||
		[ "$(cat "$sp0/dst_addr")" != ip:10.80.4.2 ] ||
		[ "$(cat "$sp1/src_addr")" != ip:10.80.5.1 ] ||
		[ "$(cat "$sp1/dst_addr")" != ip:10.80.5.2 ] ||
		[ "$(cat "$sp1/disconnect")" != "Usage: echo 1 > disconnect" ]; then
		grep . "$sp0"/* "$sp1"/*
		return 1
	fi
	read -r ra rba wa wba < "$sp0/stats/rdma" && read -r rb rbb wb wbb < "$sp1/stats/rdma" &&
		sleep 2 &&
		read -r ra2 rba2 wa2 wba2 < "$sp0/stats/rdma" && read -r rb2 rbb2 wb2 wbb2 < "$sp1/stats/rdma" ||
		return 1
	echo "# rdma: path 0 $ra2 reads $wa2 writes, path 1 $rb2 reads $wb2 writes"
	# Both paths carried requests; together they carry the load.
	[ "$ra2" -gt 0 ] && [ "$wa2" -gt 0 ] && [ "$rb2" -gt 0 ] && [ "$wb2" -gt 0 ] &&
		[ $((ra2 + rb2)) -gt $((ra + rb)) ] && [ $((wa2 + wb2)) -gt $((wa + wb)) ] &&
		[ $((rba2 + rbb2)) -gt $((rba + rbb)) ] && [ $((wba2 + wbb2)) -gt $((wba + wbb)) ] ||
		return 1
	if echo 0 > "$sp1/stats/rdma" 2> /dev/null; then echo "0 taken"; return 1; fi
	echo 1 > "$sp1/stats/rdma" && read -r rb3 _ wb3 _ < "$sp1/stats/rdma" &&
		[ "$rb3" -lt "$rb2" ] && [ "$wb3" -lt "$wb2" ]
}

# disconnect (write 1) on the server: it closes path 1 (its directory goes
# first, the session's stays with path 0); the client sees the path go,
# the load runs on path 0, the client reconnects the path and its
# directory is back.
server_disconnect() {
	dmesg -c > /dev/null
	echo 1 > "$sp1/disconnect" &&
		wait_log 'rtrs: path "rdma_rs_mpath" from ip:10.80.5.1: disconnect requested' 10 &&
		wait_log 'rtrs: path "rdma_rs_mpath" closed' 10 &&
		wait_log "rtrs clt: path 1 disconnected" 30 &&
		[ -d "$sp0" ] &&
		wait_log "rtrs clt: path 1 reconnected" 60 || return 1
	for _ in $(seq 100); do
		[ -d "$sp1" ] && break
		sleep 0.1
	done
	[ -d "$sp1" ] && advance 1 2 60
}

# disconnect (write 1): the path goes down and stays down, the load runs on
# the other; reconnect (write 1) brings it back, and returns once it is
# connected, as the kernel's does.
sysfs_disconnect_reconnect() {
	echo 1 > "$p1/disconnect" && [ "$(cat "$p1/state")" = disconnected ] &&
		advance 1 1 60 && sleep 3 && [ "$(cat "$p1/state")" = disconnected ] &&
		echo 1 > "$p1/reconnect" || return 1
	[ "$(cat "$p1/state")" = connected ] || { echo "reconnect returned before the connection"; return 1; }
	advance 1 2 60
}

# remove_path: the path and its directory go, the load runs on the other;
# add_path brings a path to the same server address back, and refuses one
# that does not connect.
sysfs_remove_add() {
	echo 1 > "$p1/remove_path" || return 1
	for _ in $(seq 100); do
		[ -d "$p1" ] || break
		sleep 0.1
	done
	[ ! -d "$p1" ] && advance 1 1 60 || return 1
	if echo 1 > "$p0/remove_path" && sleep 1 && [ ! -d "$p0" ]; then
		echo "the last path was removed"
		return 1
	fi
	# A path that cannot connect (no route) is refused with an errno and
	# not kept.
	if echo "ip:10.80.5.1@ip:10.99.99.99" > "$cls/add_path" 2> /dev/null; then
		echo "a path with no route was added"
		return 1
	fi
	sleep 1
	for d in "$cls"/paths/*10.99.99.99*; do
		[ ! -e "$d" ] || { echo "kept: $d"; return 1; }
	done
	# add_path returns once the path is connected, as the kernel's does.
	echo "ip:10.80.5.1@ip:10.80.5.2" > "$cls/add_path" || return 1
	if [ ! -d "$p1" ] || [ "$(cat "$p1/state")" != connected ]; then
		echo "add_path returned before the connection"
		return 1
	fi
	advance 1 2 60
}

# Path 0's link down (client side): its requests in flight fail over to
# path 1, and no IO fails; up again, path 0 reconnects.
link_down_and_up() {
	dmesg -c > /dev/null
	ip -n rt_m link set rtv6 down &&
		wait_log "rtrs clt: path 0 disconnected" 30 &&
		advance 1 1 60 || return 1
	read -r _ _ _ f _ <<-EOF
	$(report)
	EOF
	[ "$f" -gt 0 ] || { echo "no request failed over"; return 1; }
	ip -n rt_m link set rtv6 up &&
		wait_log "rtrs clt: path 0 reconnected" 60 &&
		advance 1 2 60
}

# The server's side of path 1 goes down: the server stops answering on it,
# the client fails the path and carries on over path 0; then it comes back.
peer_silent() {
	dmesg -c > /dev/null
	ip -n rt_b link set rtv9 down &&
		wait_log "rtrs clt: path 1 disconnected" 60 &&
		advance 1 1 60 &&
		ip -n rt_b link set rtv9 up &&
		wait_log "rtrs clt: path 1 reconnected" 90 &&
		advance 1 2 60
}

# The server module goes and comes back: with no path, IO fails (and the
# ULP hears the link go down); then both paths reconnect, the load opens
# the device on the new server, and IO works again.
server_reloaded() {
	dmesg -c > /dev/null
	rmmod rtrs_rnbd_srv_test &&
		wait_log "rtrs mpath: link down" 30 &&
		sleep 2 && modprobe rtrs_rnbd_srv_test &&
		wait_log "rtrs mpath: device opened again" 90 &&
		advance 1 2 90 &&
		[ -d "$sp0" ] && [ -d "$sp1" ]
}

# A client rxe device removed under the load: its path fails and the other
# carries on; added again, the path reconnects.
device_removed() {
	dmesg -c > /dev/null
	rxe_item_remove rtm2 &&
		wait_log "rtrs clt: path 1 disconnected" 30 &&
		advance 1 1 60 &&
		rxe_bind rt_m rtv8 rtm2 &&
		wait_log "rtrs clt: path 1 reconnected" 90 &&
		advance 1 2 60
}

# The client module unloaded under IO: the session closes, the server
# closes both paths.
closed_under_io() {
	dmesg -c > /dev/null
	rmmod rtrs_mpath_test &&
		wait_log "rtrs mpath: stopped" 10 &&
		wait_log 'rtrs: path "rdma_rs_mpath" closed' 30 &&
		[ ! -d "$cls" ] || return 1
	# The server's session goes with its last path.
	for _ in $(seq 100); do
		[ -d "$srv" ] || return 0
		sleep 0.1
	done
	echo "$srv is still there"
	return 1
}

teardown() {
	rmmod rtrs_mpath_test 2>/dev/null
	rmmod rtrs_rnbd_srv_test && rmmod rdma_rs_rtrs &&
		rxe_item_remove rtm1 rtm2 rtb rtn && ip netns del rt_m && ip netns del rt_b
}

ktap_plan
ktap_check setup setup
ktap_module rtrs_mpath_test
ktap_check load_runs load_runs
ktap_check sysfs_layout sysfs_layout
ktap_check sysfs_disconnect_reconnect sysfs_disconnect_reconnect
ktap_check sysfs_remove_add sysfs_remove_add
ktap_check server_sysfs server_sysfs
ktap_check server_disconnect server_disconnect
ktap_check link_down_and_up link_down_and_up
ktap_check peer_silent peer_silent
ktap_check server_reloaded server_reloaded
ktap_check device_removed device_removed
ktap_check closed_under_io closed_under_io
ktap_check teardown teardown
cleanup_run
ktap_finish
