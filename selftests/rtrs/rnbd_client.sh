#!/bin/sh
# Our RNBD client (rdma_rs_rnbd_client.ko, on our RTRS client, on our rxe
# in namespace rt_c) maps RAM disks (brd) as /dev/rsrnbdN:
# - from the kernel's rnbd_server (the kernel's RTRS server and rdma_rxe,
#   initial namespace, /dev/ram0): the sysfs texts; the size; bytes
#   written through the disk are on ram0 and the other way; the last
#   block, nothing past it; ext4 made through it, files' checksums across
#   a remount, e2fsck of ram0 clean; unmap refused while mounted; four
#   writers at once; discard zeroes exactly its range on ram0; flush; the
#   unmap closes both sessions;
# - bad map_device texts and a device the server does not have are
#   refused with their log lines, leaving no session behind;
# - from our rdma_rs_rnbd_server (rt_b, /dev/ram1) over two paths: a
#   writer runs while one path goes down and up again; a writer runs
#   while the server module is unloaded and loaded again (the mapping
#   shows "closed", its IO waits, the devices are opened again and the
#   writer finishes); every byte is checked on ram1; an unmap while the
#   disk is open is refused; a forced unmap while the server is gone
#   fails the IO that waits for it (remap_device and resize are refused
#   then); unloading the module with a mapping left unmaps it.
# resize and remap_device are tried on the kernel's server's mapping.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh
. ../lib/writers.sh
. ../lib/rnbd.sh

ctl=/sys/class/rdma_rs_rnbd_client/ctl
mod=rdma_rs_rnbd_client
ksrv=/sys/class/rnbd-server/ctl/devices
osrv=/sys/class/rdma_rs_rnbd_server/ctl/devices
osrv_mod=rdma_rs_rnbd_server
rtrs=/sys/class/rdma_rs_rtrs_client

in_c() {
	ip netns exec rt_c "$@"
}

# map_device as written from rt_c (the session opens in the writer's
# namespace).
map() { # OPTIONS
	in_c sh -c "echo '$1' > $ctl/map_device"
}

# The disk of mapping directory NAME (path@session, / made !).
disk_of() {
	d=$(readlink "$ctl/devices/$1/block") || return 1
	basename "$d"
}

setup() {
	modprobe rdma_rxe && modprobe rdma_rs_rxe && modprobe rdma_cm &&
		modprobe brd rd_nr=2 rd_size=32768 &&
		modprobe rtrs_server && modprobe rnbd_server &&
		modprobe "$mod" && cleanup_add rmmod "$mod" &&
		netns_add rt_c rt_b &&
		netns_veth - rtv6 rt_c rtv7 &&
		netns_addr - rtv6 10.80.6.1/24 && netns_addr rt_c rtv7 10.80.6.2/24 &&
		c_rxe_add rtxs rtv6 && rxe_bind rt_c rtv7 rtc6 &&
		netns_veth rt_c rtv8 rt_b rtv9 && netns_veth rt_c rtv10 rt_b rtv11 &&
		netns_addr rt_c rtv8 10.80.7.1/24 && netns_addr rt_b rtv9 10.80.7.2/24 &&
		netns_addr rt_c rtv10 10.80.8.1/24 && netns_addr rt_b rtv11 10.80.8.2/24 &&
		rxe_bind rt_c rtv8 rtc7 && rxe_bind rt_c rtv10 rtc8 &&
		rxe_bind rt_b rtv9 rtb7 && rxe_bind rt_b rtv11 rtb8 &&
		in_c ping -c 1 -W 5 10.80.6.1 > /dev/null &&
		in_c ping -c 1 -W 5 10.80.7.2 > /dev/null &&
		in_c ping -c 1 -W 5 10.80.8.2 > /dev/null &&
		ip netns exec rt_b modprobe "$osrv_mod" dev_search_path=/dev || return 1
	[ -z "$(ls "$ctl/devices")" ] &&
		grep -q "^Usage: echo \"\[dest_port=server port number\] sessname=" "$ctl/map_device"
}

# /dev/ram0 of the kernel's server, mapped rw by session rc_k.
k_map() {
	map "sessname=rc_k path=ip:10.80.6.1 device_path=/dev/ram0" ||
		{ dmesg | grep -E "rnbd|rtrs" | tail; return 1; }
	m=$ctl/devices/!dev!ram0@rc_k
	d=$(disk_of '!dev!ram0@rc_k') || { ls -l "$ctl/devices"; return 1; }
	echo "$d" > "$tmpd/k"
	echo "# rc_k: /dev/$d"
	if [ "$(cat "$m/state")" != open ] || [ "$(cat "$m/session")" != rc_k ] ||
		[ "$(cat "$m/mapping_path")" != /dev/ram0 ] || [ "$(cat "$m/access_mode")" != rw ] ||
		[ "$(cat "$m/nr_poll_queues")" != 0 ] ||
		[ "$(cat "$m/unmap_device")" != "Usage: echo <normal|force> > unmap_device" ]; then
		grep . "$m"/*
		return 1
	fi
	[ -b "/dev/$d" ] && [ "$(cat "/sys/block/$d/size")" = "$(cat /sys/block/ram0/size)" ] &&
		[ "$(cat "/sys/block/$d/ro")" = 0 ] &&
		[ "$(cat "/sys/block/$d/queue/logical_block_size")" = 512 ] &&
		[ -d "$ksrv/ram0/sessions/rc_k" ] && [ -d "$rtrs/rc_k" ] &&
		dmesg | grep -q "rnbd_client: /dev/ram0@rc_k mapped as $d (rw, 65536 sectors"
}

# A field of a device's `copies` file (ours alone): reads and writes
# sent from their own pages (zero_copy) or through a buffer (bounced).
copies() {
	awk -v k="$2" '$1 == k { print $2 }' "$ctl/devices/$1/copies"
}

# Bytes both ways; the last block; nothing past the end. Aligned direct
# IO goes from and into its own pages (no copy); pieces of pages that
# make no one region go through the tag's buffer.
k_data() {
	d=$(cat "$tmpd/k")
	m='!dev!ram0@rc_k'
	zc0=$(copies "$m" zero_copy)
	bo0=$(copies "$m" bounced)
	if [ -z "$zc0" ] || [ -z "$bo0" ]; then
		echo "no copies file for $d"
		return 1
	fi
	dd if=/dev/urandom of="$tmpd/p1" bs=4096 count=64 2> /dev/null &&
		dd if="$tmpd/p1" of="/dev/$d" bs=4096 count=64 seek=100 oflag=direct 2> /dev/null &&
		dd if=/dev/ram0 of="$tmpd/b1" bs=4096 count=64 skip=100 iflag=direct 2> /dev/null &&
		cmp "$tmpd/p1" "$tmpd/b1" || return 1
	dd if=/dev/urandom of="$tmpd/p2" bs=131072 count=8 2> /dev/null &&
		dd if="$tmpd/p2" of=/dev/ram0 bs=131072 count=8 seek=20 oflag=direct 2> /dev/null &&
		dd if="/dev/$d" of="$tmpd/b2" bs=131072 count=8 skip=20 iflag=direct 2> /dev/null &&
		cmp "$tmpd/p2" "$tmpd/b2" || return 1
	# Those went from and into their own pages: no copy, none bounced.
	zc1=$(copies "$m" zero_copy)
	bo1=$(copies "$m" bounced)
	if [ $((zc1 - zc0)) -lt 72 ] || [ "$bo1" -ne "$bo0" ]; then
		echo "aligned direct IO: zero_copy $zc0 -> $zc1, bounced $bo0 -> $bo1"
		return 1
	fi
	# Pieces of pages that make no one region go through the buffer,
	# both ways, their bytes intact.
	head -c 4096 "$tmpd/p2" > "$tmpd/s1" &&
		scatterio "/dev/$d" write 4000 "$tmpd/s1" &&
		dd if=/dev/ram0 of="$tmpd/s2" bs=4096 count=1 skip=500 iflag=direct 2> /dev/null &&
		cmp "$tmpd/s1" "$tmpd/s2" || return 1
	head -c 4096 "$tmpd/p1" > "$tmpd/s3" &&
		dd if="$tmpd/s3" of=/dev/ram0 bs=4096 count=1 seek=501 oflag=direct 2> /dev/null &&
		scatterio "/dev/$d" read 4008 "$tmpd/s4" &&
		cmp "$tmpd/s3" "$tmpd/s4" || return 1
	bo2=$(copies "$m" bounced)
	if [ $((bo2 - bo1)) -lt 2 ]; then
		echo "scattered pieces: bounced $bo1 -> $bo2"
		return 1
	fi
	# Odd sizes and offsets through the page cache, then synced.
	dd if="$tmpd/p1" of="/dev/$d" bs=1536 count=7 seek=9999 conv=fsync 2> /dev/null &&
		dd if=/dev/ram0 of="$tmpd/b3" bs=1536 count=7 skip=9999 iflag=direct 2> /dev/null &&
		head -c $((1536 * 7)) "$tmpd/p1" | cmp - "$tmpd/b3" || return 1
	last=$(($(cat /sys/block/ram0/size) / 8 - 1))
	head -c 4096 "$tmpd/p2" > "$tmpd/p2a" &&
		dd if="$tmpd/p2a" of="/dev/$d" bs=4096 count=1 seek="$last" oflag=direct 2> /dev/null &&
		dd if=/dev/ram0 of="$tmpd/b2a" bs=4096 count=1 skip="$last" iflag=direct 2> /dev/null &&
		cmp "$tmpd/p2a" "$tmpd/b2a" || return 1
	if dd if="$tmpd/p1" of="/dev/$d" bs=4096 count=1 seek=$((last + 1)) oflag=direct 2> /dev/null; then
		echo "a write past the end passed"
		return 1
	fi
}

# resize and remap_device on an open mapping: the disk shrinks (IO past
# its new end refused, the last block kept works) and grows back to the
# server's size, not beyond; bad values refused; remap of an open device
# answers EALREADY (-114).
k_resize() {
	d=$(cat "$tmpd/k")
	m=$ctl/devices/!dev!ram0@rc_k
	full=$(cat "/sys/block/$d/size")
	[ "$(cat "$m/resize")" = "Usage: echo <new size in sectors> > resize" ] &&
		[ "$(cat "$m/remap_device")" = "Usage: echo <1> > remap_device" ] &&
		echo 2048 > "$m/resize" && [ "$(cat "/sys/block/$d/size")" = 2048 ] &&
		dd if=/dev/urandom of="$tmpd/z1" bs=4096 count=1 2> /dev/null &&
		dd if="$tmpd/z1" of="/dev/$d" bs=4096 count=1 seek=255 oflag=direct 2> /dev/null &&
		dd if=/dev/ram0 of="$tmpd/z2" bs=4096 count=1 skip=255 iflag=direct 2> /dev/null &&
		cmp "$tmpd/z1" "$tmpd/z2" || return 1
	if dd if="$tmpd/z1" of="/dev/$d" bs=4096 count=1 seek=256 oflag=direct 2> /dev/null; then
		echo "a write past the new end passed"
		return 1
	fi
	for bad in $((full + 8)) -1 12x ""; do
		if echo "$bad" > "$m/resize" 2> /dev/null; then
			echo "resize to '$bad' passed"
			return 1
		fi
	done
	dmesg | grep -q "rnbd_client: /dev/ram0: resize: $((full + 8)) sectors, the server's device has $full" &&
		dmesg | grep -q "rnbd_client: /dev/ram0: resize: invalid value" || return 1
	echo "$full" > "$m/resize" && [ "$(cat "/sys/block/$d/size")" = "$full" ] || return 1
	# (The shell reports any failed write as an I/O error: the errno is
	# read from the client's log line.)
	if echo 1 > "$m/remap_device" 2> /dev/null; then
		echo "remap of an open device passed"
		return 1
	fi
	dmesg | grep -q "rnbd_client: /dev/ram0: remap_device: -114$" || return 1
	if echo 2 > "$m/remap_device" 2> /dev/null; then
		echo "remap_device took 2"
		return 1
	fi
	dmesg | grep -q "rnbd_client: /dev/ram0: remap_device: invalid value" && [ "$(cat "$m/state")" = open ]
}

# ext4 through our client; e2fsck on the server's side; unmap refused
# while mounted.
k_ext4() {
	d=$(cat "$tmpd/k")
	mkfs.ext4 -q -F "/dev/$d" > "$tmpd/mkfs.out" 2>&1 || { cat "$tmpd/mkfs.out"; return 1; }
	mkdir -p "$tmpd/mnt" && mount -t ext4 "/dev/$d" "$tmpd/mnt" || return 1
	mkdir -p "$tmpd/mnt/a" &&
		dd if=/dev/urandom of="$tmpd/mnt/a/f1" bs=65536 count=8 2> /dev/null &&
		dd if=/dev/urandom of="$tmpd/mnt/a/f2" bs=1000 count=3 2> /dev/null &&
		(cd "$tmpd/mnt" && find . -type f | sort | xargs md5sum) > "$tmpd/sums" || return 1
	if echo normal > "$ctl/devices/!dev!ram0@rc_k/unmap_device" 2> /dev/null; then
		echo "unmap of a mounted disk passed"
		return 1
	fi
	dmesg | grep -q "rnbd_client: /dev/ram0: unmap_device: the device is in use" || return 1
	sync && umount "$tmpd/mnt" || return 1
	e2fsck -fn /dev/ram0 > "$tmpd/fsck.out" 2>&1 || { cat "$tmpd/fsck.out"; return 1; }
	mount -t ext4 "/dev/$d" "$tmpd/mnt" &&
		(cd "$tmpd/mnt" && md5sum -c "$tmpd/sums" > /dev/null) &&
		[ "$(wc -l < "$tmpd/sums")" = 2 ] && umount "$tmpd/mnt"
}

# Four writers at once, each on its own 256 KiB, each reading back.
k_parallel() {
	d=$(cat "$tmpd/k")
	four_writers "/dev/$d" 4096 || return 1
	# What they wrote is on ram0.
	cat "$tmpd/w0" "$tmpd/w1" "$tmpd/w2" "$tmpd/w3" > "$tmpd/wall" &&
		dd if=/dev/ram0 of="$tmpd/rall" bs=4096 count=256 skip=4096 iflag=direct 2> /dev/null &&
		cmp "$tmpd/wall" "$tmpd/rall"
}

# Discard as the server announces it: exactly its range reads zeroes on
# ram0, its neighbours keep their bytes; a flush goes through.
k_discard() {
	d=$(cat "$tmpd/k")
	[ "$(cat "/sys/block/$d/queue/discard_max_bytes")" -gt 0 ] ||
		{ echo "no discard announced"; return 1; }
	if ! dd if=/dev/urandom of="$tmpd/dz" bs=4096 count=16 2> /dev/null ||
		! dd if="$tmpd/dz" of="/dev/$d" bs=4096 count=16 seek=6000 oflag=direct 2>&1; then
		echo "write before the discard failed"
		return 1
	fi
	# -f: the disk holds ext4 (k_ext4), which blkdiscard guards.
	blkdiscard -f -o $((6004 * 4096)) -l $((8 * 4096)) "/dev/$d" ||
		{ echo "blkdiscard failed"; dmesg | tail -5; return 1; }
	head -c $((4 * 4096)) "$tmpd/dz" > "$tmpd/dz_want" &&
		head -c $((8 * 4096)) /dev/zero >> "$tmpd/dz_want" &&
		tail -c $((4 * 4096)) "$tmpd/dz" >> "$tmpd/dz_want" &&
		dd if=/dev/ram0 of="$tmpd/dz_got" bs=4096 count=16 skip=6000 iflag=direct 2>&1 &&
		cmp "$tmpd/dz_want" "$tmpd/dz_got" || return 1
	# conv=fsync: busybox's dd has no oflag=sync.
	if ! dd if="$tmpd/dz" of="/dev/$d" bs=4096 count=1 seek=6100 oflag=direct conv=fsync 2>&1; then
		echo "synchronous write or flush failed"
		return 1
	fi
}

# A normal unmap: the disk, the directory and both sessions go.
k_unmap() {
	d=$(cat "$tmpd/k")
	echo normal > "$ctl/devices/!dev!ram0@rc_k/unmap_device" && [ ! -b "/dev/$d" ] &&
		gone "$ctl/devices/!dev!ram0@rc_k" && gone "$rtrs/rc_k" && gone "$ksrv/ram0/sessions/rc_k"
}

# Refused texts, each with its log line; no session stays.
bad_maps() {
	dmesg -c > /dev/null
	for t in "sessname=rc_x" \
		"sessname=rc_x device_path=/dev/ram0 path=ip:10.80.6.1 bogus=1" \
		"sessname=rc_x device_path=/dev/ram0 path=ip:10.80.6.300" \
		"sessname=rc_x device_path=/dev/ram0 path=ip:10.80.6.1 access_mode=rwx" \
		"sessname=rc_x device_path=/dev/ram0 path=ip:10.80.6.1 nr_poll_queues=1" \
		"sessname=rc_x device_path=/dev/ram0" \
		"sessname=rc_x device_path=/dev/nosuchdev path=ip:10.80.6.1"; do
		if map "$t" 2> /dev/null; then echo "mapped: $t"; return 1; fi
	done
	for l in "parameters missing" "unknown parameter or missing value" "cannot parse a path" \
		"invalid access_mode" "poll queues are not supported" "a new session needs a path" \
		"/dev/nosuchdev@rc_x: OPEN refused"; do
		dmesg | grep -q "rnbd_client: map_device: .*$l" || { echo "no log: $l"; dmesg | tail; return 1; }
	done
	gone "$rtrs/rc_x" && [ -z "$(ls "$ctl/devices")" ]
}

# ram1 of our server, over two paths.
o_map() {
	map "sessname=rc_o path=ip:10.80.7.1@ip:10.80.7.2 path=ip:10.80.8.1@ip:10.80.8.2 device_path=ram1" ||
		{ dmesg | grep -E "rnbd|rtrs" | tail; return 1; }
	d=$(disk_of 'ram1@rc_o') || return 1
	echo "$d" > "$tmpd/o"
	echo "# rc_o: /dev/$d"
	n=0
	for p in "$rtrs"/rc_o/paths/*; do
		[ "$(cat "$p/state")" = connected ] && n=$((n + 1))
	done
	[ "$n" = 2 ] && [ -d "$osrv/ram1/sessions/rc_o" ] &&
		[ "$(cat "$osrv/ram1/sessions/rc_o/access_mode")" = rw ] &&
		[ "$(cat "/sys/block/$d/size")" = "$(cat /sys/block/ram1/size)" ]
}

# A writer of 8 MiB (64 KiB direct writes) at 8 MiB of the disk, and its
# check on ram1.
writer() { # DISK TAG
	dd if=/dev/urandom of="$tmpd/$2" bs=65536 count=128 2> /dev/null &&
		dd if="$tmpd/$2" of="/dev/$1" bs=65536 count=128 seek=128 oflag=direct 2> "$tmpd/$2.err" &&
		touch "$tmpd/$2.done"
}

written() { # TAG
	[ -e "$tmpd/$1.done" ] || { echo "writer $1 failed"; cat "$tmpd/$1.err"; return 1; }
	dd if=/dev/ram1 of="$tmpd/$1.back" bs=65536 count=128 skip=128 iflag=direct 2> /dev/null &&
		cmp "$tmpd/$1" "$tmpd/$1.back"
}

# The state file of rc_o's path to ADDR.
path_state() {
	for p in "$rtrs"/rc_o/paths/*"$1"*; do cat "$p/state"; return; done
}

# A path waited for up to 60 s to reach STATE (connected or not).
path_wait() { # ADDR STATE
	for _ in $(seq 600); do
		case "$2:$(path_state "$1")" in
		connected:connected | down:disconnected) return 0 ;;
		esac
		sleep 0.1
	done
	echo "path to $1: $(path_state "$1"), not $2"
	return 1
}

# One path down until the client fails it, under a writer; then up again
# and connected again. The writer's bytes are all on ram1.
o_flap() {
	d=$(cat "$tmpd/o")
	writer "$d" flap &
	w=$!
	sleep 0.5
	if ! in_c ip link set rtv8 down || ! path_wait 10.80.7.2 down ||
		! in_c ip link set rtv8 up || ! path_wait 10.80.7.2 connected; then
		wait "$w"
		return 1
	fi
	wait "$w"
	written flap && [ "$(path_state 10.80.8.2)" = connected ]
}

# Unloads our server and waits (10 s at most) for mapping directory M
# to show "closed".
server_gone() { # M
	rmmod "$osrv_mod" || return 1
	for _ in $(seq 100); do
		[ "$(cat "$1/state")" = closed ] && return 0
		sleep 0.1
	done
	echo "state $(cat "$1/state")"
	return 1
}

# The server module unloaded and loaded again under a writer: the mapping
# is closed meanwhile, its IO waits, and it is open again after.
o_reload() {
	d=$(cat "$tmpd/o")
	m=$ctl/devices/ram1@rc_o
	dmesg -c > /dev/null
	writer "$d" reload &
	w=$!
	sleep 0.5
	server_gone "$m" || return 1
	ip netns exec rt_b modprobe "$osrv_mod" dev_search_path=/dev || return 1
	wait "$w"
	written reload || return 1
	[ "$(cat "$m/state")" = open ] && [ -d "$osrv/ram1/sessions/rc_o" ] &&
		dmesg | grep -q "rnbd_client: ram1@rc_o: open again"
}

# An unmap while the disk is open is refused (logged), as is a bad
# value; the disk works on; closed, it unmaps.
o_unmap_busy() {
	d=$(cat "$tmpd/o")
	m=$ctl/devices/ram1@rc_o
	dmesg -c > /dev/null
	exec 3< "/dev/$d" || return 1
	if echo normal > "$m/unmap_device" 2> /dev/null; then
		exec 3<&-
		echo "unmap of an open disk passed"
		return 1
	fi
	dd if="/dev/$d" of="$tmpd/busy" bs=65536 count=128 skip=128 iflag=direct 2> /dev/null
	exec 3<&-
	if echo sometimes > "$m/unmap_device" 2> /dev/null; then echo "bad value taken"; return 1; fi
	cmp "$tmpd/reload" "$tmpd/busy" && [ "$(cat "$m/state")" = open ] &&
		dmesg | grep -q "rnbd_client: ram1: unmap_device: the device is in use" &&
		dmesg | grep -q "rnbd_client: ram1: unmap_device: invalid value" || return 1
	echo normal > "$m/unmap_device" && gone "$m" && gone "$rtrs/rc_o" &&
		gone "$osrv/ram1/sessions/rc_o"
}

# A forced unmap while the server is gone and a writer's IO waits for
# it: the unmap returns, the writer fails (never hangs), the disk and the
# session go; the server comes back for the next case.
o_force_unmap_down() {
	map "sessname=rc_q path=ip:10.80.8.1@ip:10.80.8.2 device_path=ram1" || return 1
	d=$(disk_of 'ram1@rc_q') || return 1
	m=$ctl/devices/ram1@rc_q
	server_gone "$m" || return 1
	# No path: remap_device cannot open it (ENOTCONN, -107), resize
	# refuses a device that is not open (ENOENT).
	if echo 1 > "$m/remap_device" 2> /dev/null || echo 100 > "$m/resize" 2> /dev/null; then
		echo "remap or resize of a closed device passed"
		return 1
	fi
	dmesg | grep -q "rnbd_client: ram1: remap_device: -107$" &&
		dmesg | grep -q "rnbd_client: ram1: resize: the device is not open" || return 1
	(dd if=/dev/zero of="/dev/$d" bs=65536 count=16 oflag=direct 2> /dev/null &&
		touch "$tmpd/q.written") &
	w=$!
	sleep 1
	echo force > "$m/unmap_device" || return 1
	wait "$w"
	[ ! -e "$tmpd/q.written" ] || { echo "the writer's IO passed with no server"; return 1; }
	[ ! -b "/dev/$d" ] && gone "$m" && gone "$rtrs/rc_q" &&
		ip netns exec rt_b modprobe "$osrv_mod" dev_search_path=/dev
}

# A mapping left when the module goes is unmapped by its exit.
unload_mapped() {
	map "sessname=rc_p path=ip:10.80.7.1@ip:10.80.7.2 device_path=ram1 access_mode=ro" || return 1
	d=$(disk_of 'ram1@rc_p') && [ "$(cat "/sys/block/$d/ro")" = 1 ] &&
		[ "$(cat "$osrv/ram1/sessions/rc_p/access_mode")" = ro ] &&
		dd if="/dev/$d" of="$tmpd/ro" bs=65536 count=128 skip=128 iflag=direct 2> /dev/null &&
		cmp "$tmpd/reload" "$tmpd/ro" || return 1
	rmmod "$mod" && [ ! -e /sys/class/rdma_rs_rnbd_client ] && [ ! -b "/dev/$d" ] &&
		gone "$osrv/ram1/sessions/rc_p"
}

teardown() {
	rmmod "$osrv_mod" && rmmod rnbd_server && rmmod rtrs_server && rmmod brd &&
		rdma link delete rtxs && rxe_item_remove rtc6 rtc7 rtc8 rtb7 rtb8 &&
		ip netns del rt_c && ip netns del rt_b
}

ktap_plan
ktap_check setup setup
ktap_check k_map k_map
ktap_check k_data k_data
ktap_check k_resize k_resize
ktap_check k_ext4 k_ext4
ktap_check k_parallel k_parallel
ktap_check k_discard k_discard
ktap_check k_unmap k_unmap
ktap_check bad_maps bad_maps
ktap_check o_map o_map
ktap_check o_flap o_flap
ktap_check o_reload o_reload
ktap_check o_unmap_busy o_unmap_busy
ktap_check o_force_unmap_down o_force_unmap_down
ktap_check unload_mapped unload_mapped
ktap_check teardown teardown
cleanup_run
ktap_finish
