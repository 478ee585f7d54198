#!/bin/sh
# Devices of the rxe suites (sourced).
#
#   rxe_bind NS NETDEV ITEM
#       makes our rdma_rs_rxe device ITEM (a configfs item) and binds it to
#       NETDEV of namespace NS, enabled. configfs is mounted again inside
#       the namespace, as `ip netns exec` gives it a fresh /sys.
#   roce_v2_gid_index DEV TAIL
#       prints the index of the RoCE v2 GID ending in TAIL (the IPv4
#       address in hex, e.g. 0a4f:0001) on port 1 of the kernel's RDMA
#       device DEV: its table lists every address as RoCE v1 and v2, and
#       rxe speaks v2 only. Fails if there is none.

rxe_cfs=/sys/kernel/config/rdma_rs_rxe

rxe_bind() {
	mkdir $rxe_cfs/$3 &&
		ip netns exec $1 sh -c "mount -t configfs none /sys/kernel/config 2>/dev/null;
			echo $2 > $rxe_cfs/$3/netdev && echo 1 > $rxe_cfs/$3/enable"
}

roce_v2_gid_index() {
	_p=/sys/class/infiniband/$1/ports/1
	for _g in $_p/gids/*; do
		_i=$(basename "$_g")
		case "$(cat "$_g")" in
		*"$2") [ "$(cat $_p/gid_attrs/types/$_i 2>/dev/null)" = "RoCE v2" ] &&
			{ echo "$_i"; return 0; } ;;
		esac
	done
	return 1
}
