#!/bin/sh
# Our rxe against the kernel's own rdma_rxe, on the wire: the kernel's
# device cxi on iv0 (10.82.0.1, initial namespace, where rdma_rxe listens)
# and our rxi on iv1 (10.82.0.2) in namespace iopx, the two ends of a veth
# pair. modules/rdma_rxe_interop_test.rs runs RC and UD traffic both ways
# between an endpoint of ours and one on the kernel's verbs (the C module
# rxe_cpeer), and a CM REQ from our QP1 that the kernel's CM (ib_cm)
# rejects from its QP1. Meanwhile pktcap records what each side receives, that is
# what the other sent, and pktcmp checks every packet of both with our
# codec (ICRC included; each must build again to the same bytes) and
# compares the header shapes the two stacks used for the same operations.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

cfs=/sys/kernel/config/rdma_rs_rxe

# rxe_cpeer needs rdma_cm (its rdma_cm endpoints): loaded before it.
setup() {
	modprobe rdma_rxe && modprobe ib_cm && modprobe rdma_cm && modprobe rdma_rs_rxe && netns_add iopx &&
		netns_veth - iv0 iopx iv1 &&
		netns_addr - iv0 10.82.0.1/24 && netns_addr iopx iv1 10.82.0.2/24 &&
		c_rxe_add cxi iv0 && rxe_bind iopx iv1 rxi &&
		mcast_member
}

# The kernel's rxe only opens its MAC filter when a QP attaches to a group:
# its host joins the IPv4 group our multicast case sends to (ours joins its
# own groups when its QPs attach).
mcast_member() {
	ip addr add 239.1.2.4/32 dev iv0 autojoin || return 1
	cleanup_add ip addr del 239.1.2.4/32 dev iv0
}

teardown() {
	rmmod rdma_rxe_interop_test 2>/dev/null
	rmmod rxe_cpeer && echo 0 > "$cfs/rxi/enable" && rmdir "$cfs/rxi" && rdma link delete cxi &&
		ip link del iv0 && ip netns del iopx && rmmod rdma_rxe && rmmod rdma_rs_rxe && rmmod rdma_core &&
		{ rmmod rdma_cm iw_cm 2>/dev/null; rmmod ib_cm 2>/dev/null || true; }
}

# Every opcode must be sent by both stacks, with the same shapes, but for
# ATOMIC_WRITE and FLUSH: a kernel ULP cannot post either to the kernel's
# rdma_rxe in 6.12 (it takes no remote address), so only ours sends them.
compare() {
	pktcmp "$tmpd/theirs.hex" "$tmpd/ours.hex" RC_ATOMIC_WRITE RC_FLUSH > "$tmpd/pktcmp.out"
}

ktap_plan
ktap_check "setup" setup
ip netns exec iopx pktcap iv1 100000 600 > "$tmpd/theirs.hex" &
cap_theirs=$!
pktcap iv0 100000 600 > "$tmpd/ours.hex" &
cap_ours=$!
cleanup_add kill "$cap_theirs" "$cap_ours"
ktap_module rdma_rxe_interop_test
sleep 1
kill $cap_theirs $cap_ours 2>/dev/null
wait $cap_theirs $cap_ours 2>/dev/null
echo "# rxi: $(tr '\n' ' ' < $cfs/rxi/counters)"
ktap_check "headers_match_c" compare
sed 's/^/# /' "$tmpd/pktcmp.out"
ktap_check "teardown" teardown
ktap_finish
