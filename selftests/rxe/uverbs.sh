#!/bin/sh
# rdma_rs_uverbs: unchanged libibverbs (rdma-core 44) finds and queries our
# rxe through /dev/infiniband/uverbsN and sysfs, with the kernel's C stack
# absent and kept from autoloading; the write() ABI answers malformed and
# hostile use with errnos and leaks nothing, and wild entries and indexes
# on the rings of user QPs end only the QP they belong to (uverbs_user); a
# device removed under open files, the module pinned by them, and the C
# stack's ib_uverbs keeping ours out.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

ktap_plan

# The kernel's rdma_rxe on a veth of the same kind, as ibv_devinfo shows it
# through the C stack, for the comparison below; then the C stack goes.
netns_pair uvc uvd 10.79.2
c_devinfo() {
	modprobe rdma_rxe || return 1
	ip netns exec uvc rdma link add crx0 type rxe netdev veth_a || return 1
	ip netns exec uvc ibv_devinfo -v -d crx0 > "$tmpd/c_devinfo" 2>&1
	_rc=$?
	ip netns exec uvc rdma link delete crx0
	modprobe -r rdma_rxe && modprobe -r ib_uverbs ib_core || return 1
	[ "$_rc" = 0 ] || { sed 's/^/    # /' "$tmpd/c_devinfo"; return 1; }
}
ktap_check "c_devinfo" c_devinfo

# libibverbs asks the RDMA netlink family first; opening it would load the
# C ib_core, whose answer (no devices) would hide ours.
nocore=/etc/modprobe.d/rdma-rs-no-ib-core.conf
mkdir -p /etc/modprobe.d
printf 'install ib_core /bin/false\ninstall ib_uverbs /bin/false\n' > "$nocore"
cleanup_add rm -f "$nocore"
c_stack_absent() {
	! grep -q "^ib_core " /proc/modules
}
ktap_check "c_stack_absent" c_stack_absent
ktap_check "load" sh -c "modprobe rdma_rs_rxe && modprobe rdma_rs_uverbs"
class_abi_version() {
	[ "$(cat /sys/class/infiniband_verbs/abi_version)" = 6 ]
}
ktap_check "class_abi_version" class_abi_version

netns_pair uvx uvy 10.79.1
ktap_check "device" rxe_bind uvx veth_a rxeu0

uv=/sys/class/infiniband_verbs/uverbs0
node=/dev/infiniband/uverbs0
uverbs_node() {
	if [ "$(cat "$uv/ibdev")" != rxeu0 ] || [ "$(cat "$uv/abi_version")" != 2 ]; then
		echo "ibdev $(cat "$uv/ibdev"), abi_version $(cat "$uv/abi_version")"
		return 1
	fi
	st=$(stat -c '%t %T %a' "$node") || return 1
	# shellcheck disable=SC2086 # three words, split on purpose
	set -- $st
	got="$(printf '%d:%d' "0x$1" "0x$2") $3"
	want="$(cat "$uv/dev") 666"
	[ "$got" = "$want" ] || { echo "node $got, sysfs $want"; return 1; }
}
ktap_check "uverbs_node" uverbs_node

guid=$(cat /sys/class/rdma_rs/rxeu0/node_guid)
ibv_devices_lists() {
	ibv_devices > "$tmpd/devices" 2>&1
	want="rxeu0 $(echo "$guid" | tr -d :)"
	got=$(awk '$1 == "rxeu0" { print $1, $2 }' "$tmpd/devices")
	[ "$got" = "$want" ] || { sed 's/^/    # /' "$tmpd/devices"; return 1; }
}
ktap_check "ibv_devices" ibv_devices_lists

# ibv_devinfo -v: the device's attributes and its port, through
# GET_CONTEXT, QUERY_DEVICE (extended), QUERY_PORT and the GID table in
# /sys/class/infiniband.
has() { # pattern
	grep -Eq "$1" "$tmpd/devinfo" || { echo "no line matching '$1'"; return 1; }
}
ibv_devinfo_reports() {
	ibv_devinfo -v -d rxeu0 > "$tmpd/devinfo" 2>&1 || { sed 's/^/    # /' "$tmpd/devinfo"; return 1; }
	has "^hca_id:[[:space:]]+rxeu0$" && has "node_guid:[[:space:]]+$guid$" &&
		has "phys_port_cnt:[[:space:]]+1$" && has "max_qp:[[:space:]]+65536$" &&
		has "max_qp_wr:[[:space:]]+16384$" && has "max_sge:[[:space:]]+8$" &&
		has "atomic_cap:[[:space:]]+ATOMIC_HCA \(1\)$" &&
		has "state:[[:space:]]+PORT_ACTIVE \(4\)$" &&
		has "link_layer:[[:space:]]+Ethernet$" &&
		has "GID\[ *[0-9]+\]:[[:space:]]+::ffff:10\.79\.1\.1, RoCE v2$" && return 0
	sed 's/^/    # /' "$tmpd/devinfo"
	return 1
}
ktap_check "ibv_devinfo" ibv_devinfo_reports

# iproute2's rdma asks our NETLINK_RDMA server (the module holds the
# family, so nothing autoloads ib_core either).
rdma_tool_shows() {
	if ! { rdma dev && rdma link && rdma system; } > "$tmpd/rdma" 2>&1; then
		sed 's/^/    # /' "$tmpd/rdma"
		return 1
	fi
	grep -Eq "^0: rxeu0: node_type ca .*node_guid $guid" "$tmpd/rdma" &&
		grep -Eq "^link rxeu0/1 state ACTIVE physical_state LINK_UP" "$tmpd/rdma" &&
		grep -q "netns shared" "$tmpd/rdma" && ! grep -q "^ib_core " /proc/modules && return 0
	sed 's/^/    # /' "$tmpd/rdma"
	return 1
}
ktap_check "rdma_tool" rdma_tool_shows

# The port as both stacks report it, field by field: what the link and the
# RoCE v2 protocol fix must be the same (device limits are each stack's own
# and are left out).
port_fields="state max_mtu active_mtu sm_lid port_lid port_lmc link_layer
max_vl_num bad_pkey_cntr qkey_viol_cntr sm_sl pkey_tbl_len
subnet_timeout init_type_reply active_width active_speed phys_state
transport phys_port_cnt"
field() { # file name
	awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ +/, ""); print; exit }' "$1"
}
devinfo_as_c() {
	_bad=0
	# shellcheck disable=SC2086 # a list of words
	for f in $port_fields; do
		c=$(field "$tmpd/c_devinfo" "$f")
		o=$(field "$tmpd/devinfo" "$f")
		if [ -z "$c" ] || [ "$c" != "$o" ]; then
			echo "$f: C '$c', ours '$o'"
			_bad=1
		fi
	done
	return "$_bad"
}
ktap_check "devinfo_as_c_rxe" devinfo_as_c

# The hostile program's cases; every object it leaves is gone after.
res=/sys/class/rdma_rs/rxeu0/resources
cat "$res" > "$tmpd/res0"
ktap_check "abi_ioctl" uverbs_user ioctl "$node"
ktap_check "abi_framing" uverbs_user framing "$node"
ktap_check "abi_handles" uverbs_user handles "$node"
ktap_check "abi_events" uverbs_user events "$node"
ktap_check "abi_channel" uverbs_user channel "$node"
ktap_check "abi_cq" uverbs_user cq "$node"
# Wild send entries (bad opcode, flag, num_sge, inline length, SGE sum,
# AH numbers), each on a fresh UD QP: ERR, LOC_QP_OP_ERR then flushes, in
# order; another QP and another file's QP keep working.
ktap_check "ring_wild_send" uverbs_user wild_send "$node"
# Producer indexes far ahead, behind, 0xffffffff: a bounded pass, exactly
# the masked count of completions, on that QP only.
ktap_check "ring_wild_index" uverbs_user wild_index "$node"
# RESIZE_CQ of a CQ holding completions, up and down: they move in
# order into the new ring; below the waiting count (or with a wild
# consumer index) EINVAL and the old ring works on; bad handles refused.
ktap_check "ring_resize_cq" uverbs_user resize "$node"
# A bad receive entry on an RC QP connected to itself, found by its own
# SEND: ERR, LOC_QP_OP_ERR for it, flushes for the rest.
ktap_check "ring_bad_recv" uverbs_user bad_recv "$node"
# Doorbells racing DESTROY_QP/DESTROY_CQ, fork() with rings mapped, a file
# closed with every kind of object alive.
ktap_check "ring_threads" uverbs_user threads "$node"
ktap_check "nothing_left" cmp -s "$tmpd/res0" "$res"

# libibverbs' pingpongs, unchanged, between two of our devices, one in
# each namespace: user CQs and QPs on rings shared with the kernel, the
# POST_SEND doorbell, receives taken from the ring, completion events
# (-e), every received buffer checked (-c).
ktap_check "device_b" rxe_bind uvy veth_b rxeu1
gid_of() { # dev ipv4-tail: the index of the port's IPv4 GID
	for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		case "$(cat "$g")" in *ffff:"$2") basename "$g" && return 0 ;; esac
	done
	return 1
}
pingpong() { # program args...
	pair_run -g "$@" || return 1
	grep -q "bytes in" "$tmpd/pp_cli" && grep -q "bytes in" "$tmpd/pp_srv"
}
pair_run() { # gid-flag program args...: server in uvy, client in uvx
	_gf=$1 _pp=$2
	shift 2
	if ! ga=$(gid_of rxeu0 0a4f:0101) || ! gb=$(gid_of rxeu1 0a4f:0102); then
		echo "no IPv4 GID"
		return 1
	fi
	ip netns exec uvy "$_pp" -d rxeu1 "$_gf" "$gb" "$@" > "$tmpd/pp_srv" 2>&1 &
	_srv=$!
	_n=0
	until ip netns exec uvx "$_pp" -d rxeu0 "$_gf" "$ga" "$@" 10.79.1.2 > "$tmpd/pp_cli" 2>&1; do
		_n=$((_n + 1))
		# The server may not listen yet; anything else is a failure.
		if [ "$_n" -ge 50 ] || ! grep -Eq "Couldn't connect|Unable to open file descriptor" "$tmpd/pp_cli"; then
			kill "$_srv" 2>/dev/null
			wait "$_srv"
			sed 's/^/    # client: /' "$tmpd/pp_cli"
			sed 's/^/    # server: /' "$tmpd/pp_srv"
			return 1
		fi
		sleep 0.2
	done
	if ! wait "$_srv"; then
		sed 's/^/    # server: /' "$tmpd/pp_srv"
		return 1
	fi
}
# perftest: both sides exit 0 and the client reports all N iterations done.
perftest() { # N program args...
	_iters=$1
	shift
	pair_run -x "$@" -n "$_iters" -F || return 1
	perftest_completed "$tmpd/pp_cli" "$_iters" ||
		{ sed 's/^/    # client: /' "$tmpd/pp_cli"; return 1; }
}
ktap_check "rc_pingpong" pingpong ibv_rc_pingpong -n 300 -s 4096 -c
ktap_check "rc_pingpong_events" pingpong ibv_rc_pingpong -n 100 -s 100 -e -c
# The ibv_wr_* API (-N): the extended CREATE_QP.
ktap_check "rc_pingpong_wr_api" pingpong ibv_rc_pingpong -n 100 -s 4096 -N -c
ktap_check "uc_pingpong" pingpong ibv_uc_pingpong -n 100 -s 1024 -c
ktap_check "ud_pingpong" pingpong ibv_ud_pingpong -n 100 -s 1024 -c
ktap_check "srq_pingpong" pingpong ibv_srq_pingpong -n 50 -q 4 -r 32 -s 1024 -c
ktap_check "ib_write_bw" perftest 200 ib_write_bw -s 65536
ktap_check "ib_read_bw" perftest 200 ib_read_bw -s 65536
ktap_check "ib_send_bw" perftest 200 ib_send_bw -s 65536
ktap_check "ib_atomic_bw" perftest 200 ib_atomic_bw
ktap_check "ib_send_lat" perftest 200 ib_send_lat -s 64
ktap_check "nothing_left_pingpong" cmp -s "$tmpd/res0" "$res"
ktap_check "device_b_removed" rxe_item_remove rxeu1

# A file held open pins the module; the device removed under it
# disassociates it: its commands fail with EIO, its objects are gone.
device_gone() {
	mkfifo "$tmpd/in"
	uverbs_user gone "$node" < "$tmpd/in" > "$tmpd/gone" 2>&1 &
	pid=$!
	exec 7> "$tmpd/in"
	n=0
	until grep -q ready "$tmpd/gone"; do
		n=$((n + 1))
		[ "$n" -lt 100 ] || { echo "not ready"; kill "$pid"; return 1; }
		sleep 0.1
	done
	if rmmod rdma_rs_uverbs 2>/dev/null; then
		echo "unloaded under an open file"
		return 1
	fi
	rxe_item_remove rxeu0
	if [ -e "$uv" ] || [ -e "$node" ]; then
		echo "uverbs0 still there"
		return 1
	fi
	echo go >&7
	exec 7>&-
	wait "$pid" || { sed 's/^/    # /' "$tmpd/gone"; return 1; }
}
ktap_check "device_removed_under_file" device_gone
ktap_check "unload" rmmod rdma_rs_uverbs
ktap_check "class_gone" test ! -e /sys/class/infiniband_verbs

# With the kernel's ib_uverbs loaded, ours stays out and says why.
c_first() {
	rm -f "$nocore"
	modprobe ib_uverbs || return 1
	before=$(dmesg | grep -c "ib_uverbs is loaded")
	modprobe rdma_rs_uverbs 2>/dev/null
	if grep -q "^rdma_rs_uverbs " /proc/modules; then
		echo "loaded next to ib_uverbs"
		return 1
	fi
	after=$(dmesg | grep -c "ib_uverbs is loaded")
	[ "$after" -gt "$before" ] || { echo "no log line"; return 1; }
	modprobe -r ib_uverbs ib_core
}
ktap_check "c_stack_first" c_first
ktap_finish
