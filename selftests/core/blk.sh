#!/bin/sh
# A disk of our own through rdma::kshim::blk (rdma_blk_test.ko, a 32 MiB
# RAM disk served in Rust): the limits the block layer shows, bytes
# written and read back at many offsets and sizes, direct and through
# the page cache, from four processes at once, a write past the end
# refused, discard zeroing its range, an ext4 file system whose files
# survive a remount; the module held while the disk is mounted, and
# unloaded after.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/writers.sh

dev=/dev/rdmarsblk0
q=/sys/block/rdmarsblk0/queue

setup() {
	modprobe rdma_blk_test && [ -b "$dev" ] || return 1
	cleanup_add rmmod rdma_blk_test
}

limits() {
	if [ "$(cat /sys/block/rdmarsblk0/size)" != 65536 ] ||
		[ "$(cat "$q/logical_block_size")" != 512 ] ||
		[ "$(cat "$q/physical_block_size")" != 4096 ] ||
		[ "$(cat "$q/max_hw_sectors_kb")" != 64 ] ||
		[ "$(cat "$q/max_segments")" != 32 ] ||
		[ "$(cat "$q/write_cache")" != "write back" ] ||
		[ "$(cat "$q/fua")" != 1 ] ||
		[ "$(cat "$q/discard_max_hw_bytes")" != 4194304 ] ||
		[ "$(cat "$q/write_zeroes_max_bytes")" != 4194304 ]; then
		grep . /sys/block/rdmarsblk0/size "$q"/logical_block_size "$q"/physical_block_size \
			"$q"/max_hw_sectors_kb "$q"/max_segments "$q"/write_cache "$q"/fua \
			"$q"/discard_max_hw_bytes "$q"/write_zeroes_max_bytes
		return 1
	fi
}

# Sizes from one sector to 1 MiB (split into 64 KiB requests), direct.
bytes() {
	dd if=/dev/urandom of="$tmpd/p" bs=1048576 count=1 2> /dev/null || return 1
	for c in "512 1 7" "4096 1 3" "4096 16 100" "65536 4 50" "1048576 1 20"; do
		# shellcheck disable=SC2086 # three numbers, a word each
		set -- $c
		if ! dd if="$tmpd/p" of="$dev" bs="$1" count="$2" seek="$3" oflag=direct 2> /dev/null ||
			! dd if="$dev" of="$tmpd/b" bs="$1" count="$2" skip="$3" iflag=direct 2> /dev/null ||
			! head -c $(($1 * $2)) "$tmpd/p" | cmp - "$tmpd/b"; then
			echo "bs $1 count $2 at $3"
			return 1
		fi
	done
	# Through the page cache, then read back direct.
	dd if="$tmpd/p" of="$dev" bs=65536 count=16 seek=100 conv=fsync 2> /dev/null &&
		dd if="$dev" of="$tmpd/b" bs=65536 count=16 skip=100 iflag=direct 2> /dev/null &&
		cmp "$tmpd/p" "$tmpd/b"
}

parallel() {
	four_writers "$dev" 2048
}

past_end() {
	if dd if="$tmpd/p" of="$dev" bs=4096 count=1 seek=8192 oflag=direct 2> /dev/null; then
		echo "a write past the end passed"
		return 1
	fi
}

# blkdiscard of 64 KiB at 1 MiB: those bytes read as zeroes, the next
# ones are kept.
discard() {
	dd if="$tmpd/p" of="$dev" bs=65536 count=2 seek=16 oflag=direct 2> /dev/null &&
		blkdiscard -o 1048576 -l 65536 "$dev" &&
		dd if="$dev" of="$tmpd/d" bs=65536 count=1 skip=16 iflag=direct 2> /dev/null &&
		head -c 65536 /dev/zero | cmp - "$tmpd/d" &&
		dd if="$dev" of="$tmpd/d2" bs=65536 count=1 skip=17 iflag=direct 2> /dev/null &&
		head -c 131072 "$tmpd/p" | tail -c 65536 | cmp - "$tmpd/d2"
}

ext4() {
	mkfs.ext4 -q -F "$dev" > "$tmpd/mkfs" 2>&1 || { cat "$tmpd/mkfs"; return 1; }
	mkdir -p "$tmpd/mnt" && mount -t ext4 "$dev" "$tmpd/mnt" &&
		dd if=/dev/urandom of="$tmpd/mnt/f" bs=65536 count=8 2> /dev/null &&
		md5sum < "$tmpd/mnt/f" > "$tmpd/sum" || return 1
	# Held while mounted.
	if rmmod rdma_blk_test 2> /dev/null; then echo "unloaded while mounted"; return 1; fi
	umount "$tmpd/mnt" || return 1
	e2fsck -fn "$dev" > "$tmpd/fsck" 2>&1 || { cat "$tmpd/fsck"; return 1; }
	mount -t ext4 "$dev" "$tmpd/mnt" && md5sum < "$tmpd/mnt/f" | cmp - "$tmpd/sum" &&
		umount "$tmpd/mnt"
}

unload() {
	rmmod rdma_blk_test && [ ! -e "$dev" ]
}

ktap_plan
ktap_check setup setup
ktap_check limits limits
ktap_check bytes bytes
ktap_check parallel parallel
ktap_check past_end past_end
ktap_check discard discard
ktap_check ext4 ext4
ktap_check unload unload
cleanup_run
