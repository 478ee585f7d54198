#!/bin/sh
# Our RNBD server (rdma_rs_rnbd_server.ko, on our RTRS server, on our rxe
# in namespace rt_b) exports RAM disks (brd: /dev/ram0, /dev/ram1) to the
# kernel's rnbd_client over the kernel's RTRS client and rdma_rxe:
# - the device's size and block size reach the client;
# - an ext4 file system made through the client holds files whose
#   checksums survive a remount, and e2fsck finds ram0 clean;
# - what is written through /dev/rnbdN is on /dev/ram0 (read there, on
#   the server's side), and what is on ram0 is read through rnbdN;
# - four processes write and read back their own regions at once;
# - access modes as the kernel's server enforces them: a second rw map is
#   refused, ro maps are read-only, a migration map joins one rw map;
# - force_close closes a mapping on the server's side (its IO fails, the
#   client can still unmap), and the sysfs tree shows each step;
# - bad device names are refused;
# - rnbd_srv_hostile_test.ko (our RTRS client, on our rxe in rt_e) sends
#   what the kernel's client never does: each request is refused with its
#   errno, the session goes on, and the lines it wrote are on /dev/ram1;
# - the server module is reloaded under a mapped device: the client
#   reconnects and reads back what it wrote before (ram0 kept it).
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh
. ../lib/writers.sh
. ../lib/rnbd.sh

ctl=/sys/class/rnbd-client/ctl
srv=/sys/class/rdma_rs_rnbd_server/ctl/devices
mod=rdma_rs_rnbd_server

# Our server, loaded in rt_b (it listens in the loader's namespace).
srv_load() {
	ip netns exec rt_b modprobe "$mod" dev_search_path=/dev
}

setup() {
	modprobe rdma_rxe && modprobe rdma_rs_rxe && modprobe rdma_cm && modprobe rnbd_client &&
		modprobe brd rd_nr=2 rd_size=32768 &&
		netns_add rt_b && netns_veth - rtv0 rt_b rtv1 &&
		netns_addr - rtv0 10.80.1.1/24 && netns_addr rt_b rtv1 10.80.1.2/24 &&
		c_rxe_add rtxa rtv0 && rxe_bind rt_b rtv1 rtb &&
		ping -c 1 -W 5 10.80.1.2 > /dev/null && srv_load || return 1
	cleanup_add rmmod "$mod"
	if [ "$(cat /sys/module/"$mod"/parameters/port_nr)" != 1234 ] ||
		[ "$(cat /sys/module/"$mod"/parameters/dev_search_path)" != /dev ]; then
		grep . /sys/module/"$mod"/parameters/*
		return 1
	fi
	# Nothing exported yet.
	[ -d "$srv" ] && [ -z "$(ls "$srv")" ]
}

# Maps DEVICE_PATH for session SESS with access mode MODE; prints the
# client's block device. The kernel client's session then chooses paths
# round-robin: its default, min-inflight, keeps a per-CPU skip list under
# preemptible RCU, and a task preempted there makes another task on that
# CPU find no path (IO fails with ECONNABORTED; seen here with four dd
# processes and with ext4's journal thread beside a reader).
map() { # SESS DEVICE_PATH MODE
	echo "sessname=$1 path=ip:10.80.1.2 device_path=$2 access_mode=$3" > "$ctl/map_device" ||
		return 1
	echo round-robin > "/sys/class/rtrs-client/$1/mpath_policy" || return 1
	rnbd_of "$1"
}

map_rw() {
	d=$(map rs_a ram0 rw) || { dmesg | grep -E "rnbd|rtrs" | tail -20; return 1; }
	echo "$d" > "$tmpd/dev_a"
	echo "# rs_a: /dev/$d"
	s=$srv/ram0/sessions/rs_a
	if [ "$(basename "$(readlink "$srv/ram0/block_dev")")" != ram0 ] ||
		[ "$(cat "$s/read_only")" != 0 ] || [ "$(cat "$s/access_mode")" != rw ] ||
		[ "$(cat "$s/mapping_path")" != ram0 ] ||
		[ "$(cat "$s/force_close")" != "Usage: echo 1 > force_close" ]; then
		ls -lR "$srv"
		grep . "$s"/*
		return 1
	fi
	# The client sees the device as it is.
	[ "$(cat "/sys/block/$d/size")" = "$(cat /sys/block/ram0/size)" ] &&
		[ "$(cat "/sys/block/$d/queue/logical_block_size")" = 512 ] &&
		[ "$(cat "/sys/block/$d/ro")" = 0 ]
}

# Bytes written through the client are on ram0, and the other way.
data_on_device() {
	d=$(cat "$tmpd/dev_a")
	dd if=/dev/urandom of="$tmpd/p1" bs=4096 count=64 2> /dev/null &&
		dd if="$tmpd/p1" of="/dev/$d" bs=4096 count=64 seek=100 oflag=direct 2> /dev/null &&
		dd if=/dev/ram0 of="$tmpd/b1" bs=4096 count=64 skip=100 iflag=direct 2> /dev/null &&
		cmp "$tmpd/p1" "$tmpd/b1" || return 1
	dd if=/dev/urandom of="$tmpd/p2" bs=65536 count=8 2> /dev/null &&
		dd if="$tmpd/p2" of=/dev/ram0 bs=65536 count=8 seek=40 oflag=direct 2> /dev/null &&
		dd if="/dev/$d" of="$tmpd/b2" bs=65536 count=8 skip=40 iflag=direct 2> /dev/null &&
		cmp "$tmpd/p2" "$tmpd/b2" || return 1
	# The last block of the device, and nothing past it.
	last=$(($(cat /sys/block/ram0/size) / 8 - 1))
	head -c 4096 "$tmpd/p1" > "$tmpd/p1a" &&
		dd if="$tmpd/p1a" of="/dev/$d" bs=4096 count=1 seek="$last" oflag=direct 2> /dev/null &&
		dd if=/dev/ram0 of="$tmpd/b1a" bs=4096 count=1 skip="$last" iflag=direct 2> /dev/null &&
		cmp "$tmpd/p1a" "$tmpd/b1a" || return 1
	if dd if="$tmpd/p1" of="/dev/$d" bs=4096 count=1 seek=$((last + 1)) oflag=direct 2> /dev/null; then
		echo "a write past the end passed"
		return 1
	fi
}

# mkfs.ext4 through the client, files written, remounted, read back.
ext4_files() {
	d=$(cat "$tmpd/dev_a")
	mkfs.ext4 -q -F "/dev/$d" > "$tmpd/mkfs.out" 2>&1 || { cat "$tmpd/mkfs.out"; return 1; }
	mkdir -p "$tmpd/mnt" && mount -t ext4 "/dev/$d" "$tmpd/mnt" || return 1
	mkdir -p "$tmpd/mnt/a/b" &&
		for i in 1 2 3 4; do
			dd if=/dev/urandom of="$tmpd/mnt/a/f$i" bs=65536 count=$((i * 4)) 2> /dev/null || return 1
		done &&
		dd if=/dev/urandom of="$tmpd/mnt/a/b/small" bs=100 count=3 2> /dev/null &&
		(cd "$tmpd/mnt" && find . -type f | sort | xargs md5sum) > "$tmpd/sums" &&
		sync && umount "$tmpd/mnt" || return 1
	# Nothing of it is cached on this side now; e2fsck reads the server's
	# device itself.
	e2fsck -fn /dev/ram0 > "$tmpd/fsck.out" 2>&1 || { cat "$tmpd/fsck.out"; return 1; }
	mount -t ext4 "/dev/$d" "$tmpd/mnt" &&
		(cd "$tmpd/mnt" && md5sum -c "$tmpd/sums" > /dev/null) &&
		[ "$(wc -l < "$tmpd/sums")" = 5 ] && umount "$tmpd/mnt"
}

# Four writers at once, each on its own 256 KiB, then each reads back.
parallel_io() {
	d=$(cat "$tmpd/dev_a")
	four_writers "/dev/$d" 4096 || return 1
}

# A second rw map of ram0 is refused; ro maps read and cannot write; a
# migration map joins the rw one, a second migration is refused.
access_modes() {
	dmesg -c > /dev/null
	if map rs_b ram0 rw > /dev/null 2>&1; then echo "second rw map taken"; return 1; fi
	dmesg | grep -q "rnbd_server: device ram0 refused as rw: opened for writing 1 time(s)" ||
		{ dmesg | tail -5; return 1; }
	gone "$srv/ram0/sessions/rs_b" || return 1
	d=$(map rs_b ram0 ro) || return 1
	echo "$d" > "$tmpd/dev_b"
	s=$srv/ram0/sessions/rs_b
	[ "$(cat "$s/read_only")" = 1 ] && [ "$(cat "$s/access_mode")" = ro ] &&
		[ "$(cat "/sys/block/$d/ro")" = 1 ] || return 1
	dd if="/dev/$d" of="$tmpd/b3" bs=4096 count=64 skip=100 iflag=direct 2> /dev/null &&
		cmp "$tmpd/p1" "$tmpd/b3" || return 1
	if dd if="$tmpd/p1" of="/dev/$d" bs=4096 count=1 oflag=direct 2> /dev/null; then
		echo "a write on a ro map passed"
		return 1
	fi
	m=$(map rs_c ram0 migration) || { echo "migration refused"; return 1; }
	[ "$(cat "$srv/ram0/sessions/rs_c/access_mode")" = migration ] || return 1
	if map rs_d ram0 migration > /dev/null 2>&1; then echo "third writer taken"; return 1; fi
	rnbd_unmap "$m" rs_c && gone "$srv/ram0/sessions/rs_c"
}

# force_close of rs_b's mapping: its directory goes, its IO fails, the
# client unmaps it; rs_a is untouched.
force_close() {
	d=$(cat "$tmpd/dev_b")
	dmesg -c > /dev/null
	echo 1 > "$srv/ram0/sessions/rs_b/force_close" && gone "$srv/ram0/sessions/rs_b" || return 1
	dmesg | grep -q "rnbd_server: device ram0 (id 0) closed by force_close" || { dmesg | tail; return 1; }
	if dd if="/dev/$d" of=/dev/null bs=4096 count=1 iflag=direct 2> /dev/null; then
		echo "IO on a closed mapping passed"
		return 1
	fi
	rnbd_unmap "$d" rs_b || return 1
	a=$(cat "$tmpd/dev_a")
	dd if="/dev/$a" of="$tmpd/b4" bs=4096 count=64 skip=100 iflag=direct 2> /dev/null &&
		cmp "$tmpd/p1" "$tmpd/b4" && [ -d "$srv/ram0/sessions/rs_a" ]
}

# Names outside the search path, or of nothing, are refused.
bad_names() {
	dmesg -c > /dev/null
	for n in ../dev/ram1 ram1/../ram0 nosuchdev; do
		if map rs_e "$n" ro > /dev/null 2>&1; then echo "$n mapped"; return 1; fi
	done
	if ! dmesg | grep -q 'rnbd_server: session "rs_e": bad device name' ||
		! dmesg | grep -q 'rnbd_server: session "rs_e": cannot open "/dev/nosuchdev" (errno -2)'; then
		dmesg | grep rnbd_server
		return 1
	fi
	# ram1 itself is fine.
	d=$(map rs_e ram1 rw) && [ -d "$srv/ram1/sessions/rs_e" ] && rnbd_unmap "$d" rs_e &&
		gone "$srv/ram1"
}

# Our rxe rte in rt_e, 10.80.3.1, to the server's 10.80.3.2 on our rtd.
hostile_setup() {
	netns_add rt_e && netns_veth rt_e rtv4 rt_b rtv5 &&
		netns_addr rt_e rtv4 10.80.3.1/24 && netns_addr rt_b rtv5 10.80.3.2/24 &&
		rxe_bind rt_e rtv4 rte && rxe_bind rt_b rtv5 rtd &&
		ip netns exec rt_e ping -c 1 -W 5 10.80.3.2 > /dev/null
}

lines() {
	awk -v f="$1" -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%015x\n", f + i }'
}

# What the module left: its lines at 4 MiB of ram1, and ram0 open
# read-only beside rs_a; unloading it closes its session and mapping.
hostile_after() {
	lines 28672 4096 > "$tmpd/hl" &&
		dd if=/dev/ram1 of="$tmpd/hb" bs=4096 skip=1024 count=16 iflag=direct 2> /dev/null &&
		cmp "$tmpd/hl" "$tmpd/hb" || return 1
	s=$srv/ram0/sessions/rs_hostile
	if [ "$(cat "$s/access_mode")" != ro ] || [ "$(cat "$s/mapping_path")" != ram0 ] ||
		[ -e "$srv/ram1" ]; then
		ls -R "$srv"
		return 1
	fi
	rmmod rnbd_srv_hostile_test && gone "$s" && [ -d "$srv/ram0/sessions/rs_a" ]
}

# The server reloaded under rs_a's mapping: the client reconnects (asked
# to at once) and reads what it wrote before.
server_reloaded() {
	a=$(cat "$tmpd/dev_a")
	rmmod "$mod" && [ ! -e /sys/class/rdma_rs_rnbd_server ] || return 1
	dmesg -c > /dev/null
	srv_load || return 1
	for p in /sys/class/rtrs-client/rs_a/paths/*; do echo 1 > "$p/reconnect" 2> /dev/null; done
	for _ in $(seq 300); do
		[ -d "$srv/ram0/sessions/rs_a" ] && break
		sleep 0.1
	done
	[ -d "$srv/ram0/sessions/rs_a" ] || { echo "no reopen in 30 s"; dmesg | tail; return 1; }
	dd if="/dev/$a" of="$tmpd/b5" bs=4096 count=64 skip=100 iflag=direct 2> /dev/null &&
		cmp "$tmpd/p1" "$tmpd/b5"
}

unmap() {
	a=$(cat "$tmpd/dev_a")
	rnbd_unmap "$a" rs_a && gone "$srv/ram0"
}

teardown() {
	rmmod rnbd_client rtrs_client 2> /dev/null
	rmmod rnbd_srv_hostile_test 2> /dev/null
	rmmod "$mod" && [ ! -e /sys/class/rdma_rs_rnbd_server ] && rmmod brd &&
		rdma link delete rtxa && rxe_item_remove rtb rte rtd && ip netns del rt_b &&
		ip netns del rt_e
}

ktap_plan
ktap_check setup setup
ktap_check map_rw map_rw
ktap_check ext4_files ext4_files
ktap_check data_on_device data_on_device
ktap_check parallel_io parallel_io
ktap_check access_modes access_modes
ktap_check force_close force_close
ktap_check bad_names bad_names
ktap_check hostile_setup hostile_setup
ktap_module rnbd_srv_hostile_test
ktap_check hostile_after hostile_after
ktap_check server_reloaded server_reloaded
ktap_check unmap unmap
ktap_check teardown teardown
cleanup_run
ktap_finish
