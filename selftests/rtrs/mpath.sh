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
# under IO. Mismatches are never allowed.
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
	for _ in $(seq $(($2 * 10))); do
		dmesg | grep -q "$1" && return 0
		sleep 0.1
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
	for _ in $(seq $(($3 * 10))); do
		read -r r e m f u <<-EOF
		$(report)
		EOF
		[ "$m" -eq 0 ] || { echo "mismatches: $m"; return 1; }
		if [ "$r" -ge $((r0 + $1)) ] && [ "$u" -eq "$2" ] && [ "$e" -eq "$e0" ]; then
			echo "# $r rounds, $e IO errors, $f failovers, $u up"
			return 0
		fi
		sleep 0.2
	done
	echo "the load did not advance: $(report) (from $base)"
	dmesg | grep -E "rtrs|rnbd" | tail -n 20
	return 1
}

load_runs() {
	advance 20 2 60
}

# Path 0's link down (client side): its requests in flight fail over to
# path 1, and no IO fails; up again, path 0 reconnects.
link_down_and_up() {
	dmesg -c > /dev/null
	ip -n rt_m link set rtv6 down &&
		wait_log "rtrs clt: path 0 disconnected" 30 &&
		advance 20 1 60 || return 1
	read -r _ _ _ f _ <<-EOF
	$(report)
	EOF
	[ "$f" -gt 0 ] || { echo "no request failed over"; return 1; }
	ip -n rt_m link set rtv6 up &&
		wait_log "rtrs clt: path 0 reconnected" 60 &&
		advance 20 2 60
}

# The server's side of path 1 goes down: the server stops answering on it,
# the client fails the path and carries on over path 0; then it comes back.
peer_silent() {
	dmesg -c > /dev/null
	ip -n rt_b link set rtv9 down &&
		wait_log "rtrs clt: path 1 disconnected" 60 &&
		advance 20 1 60 &&
		ip -n rt_b link set rtv9 up &&
		wait_log "rtrs clt: path 1 reconnected" 90 &&
		advance 20 2 60
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
		advance 20 2 90
}

# A client rxe device removed under the load: its path fails and the other
# carries on; added again, the path reconnects.
device_removed() {
	dmesg -c > /dev/null
	rxe_item_remove rtm2 &&
		wait_log "rtrs clt: path 1 disconnected" 30 &&
		advance 20 1 60 &&
		rxe_bind rt_m rtv8 rtm2 &&
		wait_log "rtrs clt: path 1 reconnected" 90 &&
		advance 20 2 60
}

# The client module unloaded under IO: the session closes, the server
# closes both paths.
closed_under_io() {
	dmesg -c > /dev/null
	rmmod rtrs_mpath_test &&
		wait_log "rtrs mpath: stopped" 10 &&
		wait_log 'rtrs: path "rdma_rs_mpath" closed' 30
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
ktap_check link_down_and_up link_down_and_up
ktap_check peer_silent peer_silent
ktap_check server_reloaded server_reloaded
ktap_check device_removed device_removed
ktap_check closed_under_io closed_under_io
ktap_check teardown teardown
cleanup_run
ktap_finish
