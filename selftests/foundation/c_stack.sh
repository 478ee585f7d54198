#!/bin/sh
# The kernel's own C RDMA stack and its userspace tools work in the guest:
# rdma_rxe on a veth pair, seen by `rdma link` and `ibv_devinfo`, and an
# RC ping-pong through libibverbs.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

ktap_plan
ktap_check "modprobe_rdma_rxe" modprobe rdma_rxe
netns_veth - veth_c0 - veth_c1
netns_addr - veth_c0 10.77.2.1/24
netns_addr - veth_c1 10.77.2.2/24
rdma_link_add() {
	c_rxe_add rxe_c0 veth_c0 && c_rxe_add rxe_c1 veth_c1
}
ktap_check "rdma_link_add" rdma_link_add
ktap_check "rdma_link_shows_devices" sh -c 'rdma link show | grep -q "rxe_c0/1 state ACTIVE" &&
	rdma link show | grep -q "netdev veth_c1"'
ktap_check "ibv_devinfo_sees_device" sh -c 'ibv_devinfo -d rxe_c0 | grep -q "state:.*PORT_ACTIVE" &&
	ibv_devinfo -d rxe_c0 | grep -q "link_layer:.*Ethernet"'

# An RC ping-pong through libibverbs, both ends on rxe_c0 (rxe loops packets
# to its own GID back; two addresses of one host would route over lo instead
# of the veth). GID 1 is the RoCEv2 GID of the IPv4 address. The server
# gives up after two minutes, so a client that never connects cannot hang
# the program at `wait`.
timeout 120 ibv_rc_pingpong -d rxe_c0 -g 1 -n 100 -s 4096 > "$tmpd/pp_srv.log" 2>&1 &
srv=$!
cleanup_add kill "$srv"
sleep 2
ktap_check "ibv_rc_pingpong" timeout 60 ibv_rc_pingpong -d rxe_c0 -g 1 -n 100 -s 4096 127.0.0.1
wait $srv
if grep -q "819200 bytes" "$tmpd/pp_srv.log"; then
	ktap_pass "ibv_rc_pingpong_server"
else
	sed 's/^/    # server: /' "$tmpd/pp_srv.log"
	ktap_fail "ibv_rc_pingpong_server" "no 819200 bytes line"
fi

rdma link delete rxe_c0
rdma link delete rxe_c1
ip link del veth_c0
ktap_check "unload_c_stack" sh -c 'modprobe -r rdma_rxe && modprobe -r ib_uverbs ib_core'
ktap_finish
