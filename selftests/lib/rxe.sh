#!/bin/sh
# Devices of the rxe suites (sourced, after cleanup.sh). What is made here
# is registered with cleanup_add and goes away when the program exits.
#
#   rxe_item_new ITEM
#       makes the configfs item ITEM of rdma_rs_rxe (a device of ours, not
#       yet bound); at exit it is disabled and removed.
#   rxe_bind NS NETDEV ITEM
#       makes our rdma_rs_rxe device ITEM (rxe_item_new) and binds it to
#       NETDEV of namespace NS, enabled. configfs is mounted again inside
#       the namespace, as `ip netns exec` gives it a fresh /sys.
#   rxe_item_remove ITEM...
#       disables and removes the items that exist, quietly (the cleanup).
#   rxe_counter ITEM NAME
#       prints counter NAME of our device ITEM (its configfs counters file).
#   rxe_counters_show ITEM...
#       prints all counters of each of our devices ITEM on one line,
#       "ITEM: NAME VALUE NAME VALUE ... " (for a failed check's output).
#   c_rxe_add NAME NETDEV
#       makes a device NAME of the kernel's rdma_rxe on NETDEV (`rdma link
#       add`, initial namespace); at exit it is deleted.
#   roce_v2_gid_index DEV TAIL
#       prints the index of the RoCE v2 GID ending in TAIL (the IPv4
#       address in hex, e.g. 0a4f:0001) on port 1 of the kernel's RDMA
#       device DEV: its table lists every address as RoCE v1 and v2, and
#       rxe speaks v2 only. Fails if there is none.

rxe_cfs=/sys/kernel/config/rdma_rs_rxe

rxe_item_new() {
	mkdir "$rxe_cfs/$1" || return 1
	cleanup_add rxe_item_remove "$1"
}

rxe_bind() {
	rxe_item_new "$3" &&
		ip netns exec "$1" sh -c "mount -t configfs none /sys/kernel/config 2>/dev/null;
			echo $2 > $rxe_cfs/$3/netdev && echo 1 > $rxe_cfs/$3/enable"
}

rxe_item_remove() {
	for _it in "$@"; do
		[ -d "$rxe_cfs/$_it" ] || continue
		echo 0 2>/dev/null > "$rxe_cfs/$_it/enable"
		rmdir "$rxe_cfs/$_it" 2>/dev/null
	done
	return 0
}

c_rxe_add() {
	rdma link add "$1" type rxe netdev "$2" || return 1
	cleanup_add rdma link delete "$1"
}

roce_v2_gid_index() {
	_p=/sys/class/infiniband/$1/ports/1
	for _g in "$_p"/gids/*; do
		_i=$(basename "$_g")
		case "$(cat "$_g")" in
		*"$2") [ "$(cat "$_p/gid_attrs/types/$_i" 2>/dev/null)" = "RoCE v2" ] &&
			{ echo "$_i"; return 0; } ;;
		esac
	done
	return 1
}

rxe_counter() {
	sed -n "s/^$2 //p" "$rxe_cfs/$1/counters"
}

rxe_counters_show() {
	for _it in "$@"; do
		echo "$_it: $(tr '\n' ' ' < "$rxe_cfs/$_it/counters")"
	done
}

# perftest's output in FILE has its result row for ITERATIONS ("#bytes
# #iterations" then the figures), which perftest prints only once every
# iteration has completed with success (a bad completion makes it exit
# non-zero first), and a figure in it is not zero. perftest scales its
# cycle counts by a clock rate it estimates by regression against
# gettimeofday(); on a loaded TCG guest that fit can fail its r^2 test,
# perftest says so and every figure reads 0.00: then the row alone counts.
# With a third argument "row", the row alone counts: for the passive side
# of ib_write_bw and ib_read_bw, which prints the report its client sent
# (a failed estimate on the other machine shows there as 0.00 with no
# warning), and where the figures are not perftest's (make bench times
# runs from outside).
perftest_completed() { # file iterations [row]
	awk -v n="$2" -v mode="${3:-}" '
		BEGIN { noclock = (mode == "row") }
		/^Correlation coefficient r\^2/ { noclock = 1 }
		$1 ~ /^[0-9]+$/ && $2 == n && NF >= 5 { row = 1; if ($4 + 0 > 0 || $5 + 0 > 0) fig = 1 }
		END { exit !(row && (fig || noclock)) }' "$1"
}
