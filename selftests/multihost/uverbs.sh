#!/bin/sh
# User space across the two guests, each stack on its own side: guest 0
# runs our rxe with rdma_rs_uverbs (the C ib_core kept from loading), guest
# 1 the kernel's rdma_rxe with ib_uverbs; both have unchanged rdma-core 44.
# libibverbs' pingpongs (every buffer checked) and perftest run between
# them in both directions: first the kernel's side serves and ours
# connects, then ours serves and the kernel's connects.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/rxe.sh

ktap_plan
if [ -z "$RDMA_RS_GUEST" ] || ! ip link show eth0 > /dev/null 2>&1; then
	ktap_skip "setup" "not a joined test guest"
	ktap_skip "rc_pingpong" "not a joined test guest"
	ktap_skip "ud_pingpong" "not a joined test guest"
	ktap_skip "srq_pingpong" "not a joined test guest"
	ktap_skip "ib_write_bw" "not a joined test guest"
	ktap_skip "ib_read_bw" "not a joined test guest"
	ktap_skip "ib_send_bw" "not a joined test guest"
	ktap_skip "teardown" "not a joined test guest"
	ktap_finish
fi
me=$((RDMA_RS_GUEST + 1))
peer=10.77.9.$((2 - RDMA_RS_GUEST))
nocore=/etc/modprobe.d/rdma-rs-no-ib-core.conf

setup() {
	ip addr show dev eth0 | grep -q "10.77.9.$me/" || ip addr add "10.77.9.$me/24" dev eth0 || return 1
	ip link set eth0 up || return 1
	if [ "$RDMA_RS_GUEST" = 0 ]; then
		mkdir -p /etc/modprobe.d
		printf 'install ib_core /bin/false\ninstall ib_uverbs /bin/false\n' > "$nocore"
		cleanup_add rm -f "$nocore"
		modprobe rdma_rs_rxe && modprobe rdma_rs_uverbs && rxe_item_new rxu &&
			echo eth0 > "$rxe_cfs/rxu/netdev" && echo 1 > "$rxe_cfs/rxu/enable" || return 1
	else
		modprobe rdma_rxe && modprobe ib_uverbs && c_rxe_add cxu eth0 || return 1
	fi
}
# The device and its RoCE v2 GID (each check runs in a subshell:
# what it sets does not last).
if [ "$RDMA_RS_GUEST" = 0 ]; then dev=rxu; else dev=cxu; fi
gid_now() {
	roce_v2_gid_index "$dev" "$(printf '0a4d:09%02x' "$me")"
}

# One program, both directions: the kernel's guest serves first.
both_ways() { # gid-flag check program args...
	_gf=$1 _check=$2
	shift 2
	for _turn in 1 0; do
		if [ "$RDMA_RS_GUEST" = "$_turn" ]; then
			timeout 120 "$@" -d "$dev" "$_gf" "$gid" > "$tmpd/out" 2>&1 ||
				{ sed "s/^/    # serving ($1): /" "$tmpd/out"; return 1; }
		else
			_n=0
			until timeout 120 "$@" -d "$dev" "$_gf" "$gid" "$peer" > "$tmpd/out" 2>&1; do
				_n=$((_n + 1))
				if [ "$_n" -ge 300 ] || ! grep -Eq "Couldn't connect|Unable to open file descriptor" "$tmpd/out"; then
					sed "s/^/    # connecting ($1): /" "$tmpd/out"
					return 1
				fi
				sleep 0.2
			done
		fi
		if [ "$RDMA_RS_GUEST" = "$_turn" ]; then _role=serving; else _role=connecting; fi
		"$_check" "$tmpd/out" "$_role" || { sed "s/^/    # $_role ($1): /" "$tmpd/out"; return 1; }
	done
}
pingpong_ok() { grep -q "bytes in" "$1"; }
pingpong() { both_ways -g pingpong_ok "$@"; }
# perftest: all N iterations done, on each side. The serving side of a
# write or read test prints the figures its client measured.
perftest_ok() { # file role
	if [ "$2" = serving ]; then
		perftest_completed "$1" "$perftest_n" row
	else
		perftest_completed "$1" "$perftest_n"
	fi
}
perftest() { # N program args...
	perftest_n=$1
	shift
	both_ways -x perftest_ok "$@" -n "$perftest_n" -F
}

teardown() {
	if [ "$RDMA_RS_GUEST" = 0 ]; then
		rxe_item_remove rxu && rmmod rdma_rs_uverbs && rmmod rdma_rs_rxe && rmmod rdma_core
	else
		rdma link delete cxu && modprobe -r rdma_rxe ib_uverbs
	fi
}

ktap_check "setup" setup
gid=$(gid_now) || gid=none
ktap_check "rc_pingpong" pingpong ibv_rc_pingpong -n 100 -s 4096 -c
ktap_check "ud_pingpong" pingpong ibv_ud_pingpong -n 100 -s 1024 -c
ktap_check "srq_pingpong" pingpong ibv_srq_pingpong -n 50 -q 4 -r 32 -s 1024 -c
ktap_check "ib_write_bw" perftest 100 ib_write_bw -s 65536
ktap_check "ib_read_bw" perftest 100 ib_read_bw -s 65536
ktap_check "ib_send_bw" perftest 100 ib_send_bw -s 65536
# Stay up a little so the other guest's last exchange ends too.
sleep 3
ktap_check "teardown" teardown
ktap_finish
