#!/bin/sh
# Packets of the kernel's own rdma_rxe, captured in the guest and checked
# by our receive path: a C rxe device crx0 on cv0 (10.79.0.1, initial
# namespace) sends to 10.79.0.2, the other end of the veth pair, in
# namespace capx, where our rdma_rs_rxe device rxc is bound. The C side is
# driven by ibv_ud_pingpong and ibv_rc_pingpong, whose TCP side channel a
# shell stand-in answers with a made-up QP number, so the C side sends a UD
# SEND and an RC SEND that no QP takes. pktcap records them on cv1; our
# device must have parsed them (ICRC included) and counted them as
# delivered to no QP. The capture is printed; rxe/wire/tests/c_capture.rs
# holds one made with this script and checks it on the host.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

cfs=/sys/kernel/config/rdma_rs_rxe

setup() {
	modprobe rdma_rxe && modprobe rdma_rs_rxe && netns_add capx &&
		netns_veth - cv0 capx cv1 &&
		netns_addr - cv0 10.79.0.1/24 && netns_addr capx cv1 10.79.0.2/24 &&
		c_rxe_add crx0 cv0 && rxe_bind capx cv1 rxc
}

# One C-side exchange: $1 is the pingpong tool; captures to $2.
exchange() {
	i0=$(roce_v2_gid_index crx0 0a4f:0001) || { ls -l /sys/class/infiniband/crx0/ports/1/gids/; return 1; }
	before=$(rxe_counter rxc rx_dropped)
	ip netns exec capx pktcap cv1 1 20 > "$2" &
	cap=$!
	cleanup_add kill "$cap"
	# The stand-in for the pingpong server: LID 0, QPN 0x11, PSN 0, and
	# our address as the GID; NUL-terminated as the tool writes it.
	ip netns exec capx sh -c 'printf "0000:000011:000000:00000000000000000000ffff0a4f0002\000" |
		busybox nc -l -p 18515 > /dev/null' &
	srv=$!
	cleanup_add kill "$srv"
	sleep 1
	timeout 10 "$1" -d crx0 -g "$i0" -s 64 -n 1 10.79.0.2 > "$tmpd/pp.log" 2>&1
	wait "$cap"
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	[ "$(wc -l < "$2")" -ge 1 ] || { cat "$tmpd/pp.log"; return 1; }
	# Parsed by our codec (a bad ICRC would not reach the device) and
	# counted as taken by no QP.
	[ "$(rxe_counter rxc rx_dropped)" -gt "$before" ] || { cat "$cfs/rxc/counters"; return 1; }
}

ud_send() {
	exchange ibv_ud_pingpong "$tmpd/c_ud.hex"
}

rc_send() {
	exchange ibv_rc_pingpong "$tmpd/c_rc.hex"
}

teardown() {
	echo 0 > "$cfs/rxc/enable" && rmdir "$cfs/rxc" && rdma link delete crx0 &&
		ip link del cv0 && ip netns del capx && rmmod rdma_rxe && rmmod rdma_rs_rxe && rmmod rdma_core
}

ktap_plan
ktap_check "setup" setup
ktap_check "c_ud_send_parsed_by_us" ud_send
sed 's/^/# c_ud: /' "$tmpd/c_ud.hex" 2>/dev/null
ktap_check "c_rc_send_parsed_by_us" rc_send
sed 's/^/# c_rc: /' "$tmpd/c_rc.hex" 2>/dev/null
ktap_check "teardown" teardown
ktap_finish
