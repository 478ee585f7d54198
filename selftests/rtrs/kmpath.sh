#!/bin/sh
# The kernel's RNBD client maps a device of our RNBD test server
# (rtrs_rnbd_srv_test.ko on our RTRS server, namespace rt_b) over two
# paths: 10.80.1.x (the kernel's rxe rtxa, our rxe rtb) and 10.80.2.x
# (rtxb, rtd), one veth pair each. Both paths connect; round-robin puts IO
# on both (the kernel client's per-path counters); path 2 goes black under
# a verified write (our rtd's fault injection drops every packet it sends
# and receives), which completes on path 1 with nothing lost; the path
# comes back and reconnects (the kernel client's sysfs reconnect, instead
# of its 30 s reconnect delay); IO is verified again on both paths; the
# device is unmapped and everything unloads.
#
# Not a link down: the kernel's rdma_rxe moves a QP whose transmit fails
# to the error state, its MAD QP too, after which its CM never sends on
# that device again; a link down on rtxb would end path 2 for good.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh
. ../lib/rnbd.sh

ctl=/sys/class/rnbd-client/ctl
sess=/sys/class/rtrs-client/rdma_rs_kmp

setup() {
	modprobe rdma_rxe && modprobe rdma_rs_rxe && modprobe rdma_cm && modprobe rnbd_client &&
		netns_add rt_b &&
		netns_veth - rtv0 rt_b rtv1 && netns_veth - rtv2 rt_b rtv3 &&
		netns_addr - rtv0 10.80.1.1/24 && netns_addr rt_b rtv1 10.80.1.2/24 &&
		netns_addr - rtv2 10.80.2.1/24 && netns_addr rt_b rtv3 10.80.2.2/24 &&
		c_rxe_add rtxa rtv0 && c_rxe_add rtxb rtv2 &&
		rxe_bind rt_b rtv1 rtb && rxe_bind rt_b rtv3 rtd &&
		ping -c 1 -W 5 10.80.1.2 > /dev/null && ping -c 1 -W 5 10.80.2.2 > /dev/null &&
		modprobe rtrs_rnbd_srv_test
}

# The kernel client's path directories, one per line.
paths() {
	ls "$sess/paths"
}

# Both paths of the session connected, our server saw both come up.
map_two_paths() {
	if ! echo "sessname=rdma_rs_kmp path=ip:10.80.1.2 path=ip:10.80.2.2 device_path=ours" > "$ctl/map_device" ||
		[ ! -b /dev/rnbd0 ]; then
		dmesg | grep -E "rtrs|rnbd" | tail -20
		return 1
	fi
	[ "$(paths | wc -l)" = 2 ] || { echo "paths: $(paths)"; return 1; }
	for p in $(paths); do
		st=$(cat "$sess/paths/$p/state")
		[ "$st" = connected ] || { echo "$p: $st"; return 1; }
	done
	n=$(dmesg | grep -c 'rtrs: path "rdma_rs_kmp" up')
	[ "$n" -ge 2 ] || { echo "our server saw $n paths up"; return 1; }
}

# A path's count of requests (reads and writes), from the kernel client's
# stats/rdma: "reads read_bytes writes write_bytes inflight failovers".
requests() { # path
	awk '{ print $1 + $3 }' "$sess/paths/$1/stats/rdma"
}

failovers() { # path
	awk '{ print $6 }' "$sess/paths/$1/stats/rdma"
}

# Blocks of 4 KiB a verified IO writes and reads back: 2 MiB, 1024
# requests, some 500 a path under round-robin (each path must carry more
# than 100), about 10 s each way under TCG.
blocks=512

# Writes and reads back $blocks blocks of a fresh pattern (at offset $1 MiB
# of the server's 16 MiB), direct; the bytes must match.
verified_io() { # MiB
	dd if=/dev/urandom of="$tmpd/pattern" bs=4096 count="$blocks" 2> /dev/null &&
		dd if="$tmpd/pattern" of=/dev/rnbd0 bs=4096 count="$blocks" seek=$(($1 * 256)) oflag=direct 2> /dev/null &&
		dd if=/dev/rnbd0 of="$tmpd/back" bs=4096 count="$blocks" skip=$(($1 * 256)) iflag=direct 2> /dev/null &&
		cmp "$tmpd/pattern" "$tmpd/back"
}

# Up to 10 pings, one a second, until $1 answers.
reachable() { # address
	for _ in $(seq 10); do
		ping -c 1 -W 1 "$1" > /dev/null 2>&1 && return 0
	done
	echo "$1 unreachable"
	return 1
}

# Round-robin: IO verified, and both paths carried some of it.
both_paths_used() {
	echo 0 > "$sess/mpath_policy" || return 1
	grep -q "round-robin" "$sess/mpath_policy" || { cat "$sess/mpath_policy"; return 1; }
	for p in $(paths); do echo 1 > "$sess/paths/$p/stats/reset_all" || return 1; done
	verified_io 0 || return 1
	for p in $(paths); do
		n=$(requests "$p")
		[ "$n" -gt 100 ] || { echo "$p carried $n requests"; return 1; }
	done
}

# Path 2 black under a verified write: the write completes (the requests
# on the dead path fail over), the path is no longer connected, the first
# carries on.
blackhole_failover() {
	p2=$(paths | grep 10.80.2.2) || return 1
	dd if=/dev/urandom of="$tmpd/pattern2" bs=4096 count="$blocks" 2> /dev/null || return 1
	dd if="$tmpd/pattern2" of=/dev/rnbd0 bs=4096 count="$blocks" seek=2048 oflag=direct 2> "$tmpd/dd.err" &
	ddp=$!
	sleep 1
	# The write must still be in flight when the path goes black.
	kill -0 "$ddp" 2> /dev/null || { echo "the write ended before the fault"; return 1; }
	echo "tx_drop=100 rx_drop=100" > "$rxe_cfs/rtd/fault" || return 1
	wait "$ddp" || { cat "$tmpd/dd.err"; return 1; }
	for _ in $(seq 300); do
		[ "$(cat "$sess/paths/$p2/state")" != connected ] && break
		sleep 0.1
	done
	st=$(cat "$sess/paths/$p2/state")
	[ "$st" != connected ] || { echo "$p2 still $st"; return 1; }
	dd if=/dev/rnbd0 of="$tmpd/back2" bs=4096 count="$blocks" skip=2048 iflag=direct 2> /dev/null &&
		cmp "$tmpd/pattern2" "$tmpd/back2" || return 1
	if dmesg | grep -E "I/O error|rnbd.*failed"; then return 1; fi
}

# What both ends of path 2 saw, when it does not come back: our rxe rtd's
# counters and connection manager, the kernel's rxe rtxb's counters.
path2_state() {
	echo "rtd: $(tr '\n' ' ' < "$rxe_cfs/rtd/counters")"
	p=/sys/class/rdma_rs/rtd/ports/1
	echo "rtd port: $(cat "$p/state")"
	for f in cm_rx_msgs/req cm_rx_duplicates/req cm_tx_msgs/rep cm_tx_msgs/rej cm_rx_msgs/rtu; do
		echo "rtd $f: $(cat "$p/$f")"
	done
	h=/sys/class/infiniband/rtxb/ports/1
	echo "rtxb port: $(cat "$h/state")"
	for f in "$h"/hw_counters/*; do echo "rtxb ${f##*/}: $(cat "$f")"; done
	dmesg | grep -E "rtrs|rnbd|rtd|rtxb" | tail -20
}

# Path 2 back; the kernel client reconnects it (sysfs reconnect) to our
# server, and IO runs on both paths again.
back_reconnect() {
	p2=$(paths | grep 10.80.2.2) || return 1
	echo off > "$rxe_cfs/rtd/fault" && reachable 10.80.2.2 || return 1
	# A write to reconnect runs one attempt at once and waits for it; one
	# that fails (as the first after the blackhole may) leaves the next to
	# the client's 30 s reconnect delay, so the write is repeated, every
	# 5 s, up to 60 s.
	for i in $(seq 60); do
		[ $((i % 5)) = 1 ] && echo 1 > "$sess/paths/$p2/reconnect" 2> /dev/null
		[ "$(cat "$sess/paths/$p2/state")" = connected ] && break
		sleep 1
	done
	st=$(cat "$sess/paths/$p2/state")
	[ "$st" = connected ] || { echo "$p2: $st"; path2_state; return 1; }
	for p in $(paths); do echo 1 > "$sess/paths/$p/stats/reset_all" || return 1; done
	verified_io 4 || return 1
	for p in $(paths); do
		n=$(requests "$p")
		[ "$n" -gt 100 ] || { echo "$p carried $n requests"; return 1; }
	done
}

unmap() {
	rnbd_unmap rnbd0 rdma_rs_kmp
}

teardown() {
	echo off > "$rxe_cfs/rtd/fault" 2> /dev/null
	rmmod rnbd_client rtrs_client 2>/dev/null
	rmmod rtrs_rnbd_srv_test rdma_rs_rtrs && rdma link delete rtxa && rdma link delete rtxb &&
		rxe_item_remove rtb rtd && ip netns del rt_b
}

ktap_plan
ktap_check setup setup
ktap_check map_two_paths map_two_paths
ktap_check both_paths_used both_paths_used
ktap_check blackhole_failover blackhole_failover
ktap_check back_reconnect back_reconnect
ktap_check unmap unmap
ktap_check teardown teardown
cleanup_run
ktap_finish
