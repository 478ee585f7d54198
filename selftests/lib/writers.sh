# shellcheck shell=sh
# shellcheck disable=SC2154 # tmpd comes from cleanup.sh, sourced first
# Four processes at once, each writing 64 random 4 KiB blocks of its own
# with O_DIRECT and reading them back (16 KiB at a time), on a block
# device (core/blk.sh, rtrs/rnbd_server.sh, rtrs/rnbd_client.sh). Writer i
# starts at block FIRST + 64 i; its bytes stay in $tmpd/w<i>.
four_writers() { # DEV FIRST
	for i in 0 1 2 3; do
		(
			dd if=/dev/urandom of="$tmpd/w$i" bs=4096 count=64 2> /dev/null &&
				dd if="$tmpd/w$i" of="$1" bs=4096 count=64 seek=$(($2 + i * 64)) \
					oflag=direct 2> /dev/null &&
				dd if="$1" of="$tmpd/r$i" bs=16384 count=16 skip=$((($2 + i * 64) / 4)) \
					iflag=direct 2> /dev/null &&
				cmp "$tmpd/w$i" "$tmpd/r$i" && touch "$tmpd/ok$i"
		) &
	done
	wait
	for i in 0 1 2 3; do [ -e "$tmpd/ok$i" ] || { echo "writer $i"; return 1; }; done
}
