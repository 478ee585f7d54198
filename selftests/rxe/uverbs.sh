#!/bin/sh
# rdma_rs_uverbs: unchanged libibverbs (rdma-core 44) finds and queries our
# rxe through /dev/infiniband/uverbsN and sysfs, with the kernel's C stack
# absent and kept from autoloading; the write() ABI answers malformed and
# hostile use with errnos and leaks nothing, and wild entries and indexes
# on the rings of user QPs end only the QP they belong to (uverbs_user); a
# device removed under open files, the module pinned by them, and the C
# stack's ib_uverbs keeping ours out. `rdma link add`/`delete` make and
# remove our rxe devices; one left alive goes when rdma_rs_rxe unloads.
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

# Every network namespace is served: in uvx, rdma lists the devices, and
# libibverbs finds through netlink a device whose name librxe would not
# claim from sysfs (nsdev0, on a veth of its own in uvx).
netns_served() {
	ip link add nsv0 netns uvx type veth peer name nsv1 netns uvx || return 1
	cleanup_add ip -n uvx link del nsv0
	ip -n uvx link set nsv0 up && ip -n uvx link set nsv1 up &&
		ip -n uvx addr add 10.79.3.1/24 dev nsv0 && rxe_bind uvx nsv0 nsdev0 || return 1
	_ok=0
	ip netns exec uvx rdma dev > "$tmpd/ns_rdma" 2>&1 &&
		grep -q "rxeu0: node_type ca" "$tmpd/ns_rdma" && grep -q "nsdev0: node_type ca" "$tmpd/ns_rdma" &&
		ip netns exec uvx ibv_devinfo -d nsdev0 > "$tmpd/ns_devinfo" 2>&1 &&
		grep -q "transport:.*InfiniBand" "$tmpd/ns_devinfo" && _ok=1
	rxe_item_remove nsdev0
	ip -n uvx link del nsv0
	[ "$_ok" = 1 ] || { sed 's/^/    # /' "$tmpd/ns_rdma" "$tmpd/ns_devinfo" 2>/dev/null; return 1; }
}
ktap_check "netns_served" netns_served

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
# MODIFY_SRQ of max_wr with receives both taken by the kernel and waiting
# in the ring: below them, below the limit, without driver data, bad
# sizes and handles refused with the SRQ as it was; grown, every receive
# completes in posting order through the new ring.
ktap_check "ring_resize_srq" uverbs_user resize_srq "$node"
# Memory windows: ALLOC_MW's bad types and handles; a type 2 window bound
# from the ring opens its MR to a WRITE until LOCAL_INV closes it; a
# BIND_MW entry naming another file's window ends only its own QP.
ktap_check "ring_mw" uverbs_user mw "$node"
# Multicast groups: joins and leaves of a UD QP; other QPs, GIDs and
# handles refused.
ktap_check "abi_mcast" uverbs_user mcast "$node"
# An MR at an I/O address of its own (ibv_reg_mr_iova).
ktap_check "ring_iova" uverbs_user iova "$node"
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
	# Bounded: a run that hangs fails with both sides' output and the
	# devices' counters.
	ip netns exec uvy timeout 150 "$_pp" -d rxeu1 "$_gf" "$gb" "$@" > "$tmpd/pp_srv" 2>&1 &
	_srv=$!
	_n=0
	until ip netns exec uvx timeout 120 "$_pp" -d rxeu0 "$_gf" "$ga" "$@" 10.79.1.2 > "$tmpd/pp_cli" 2>&1; do
		_n=$((_n + 1))
		# The server may not listen yet; anything else is a failure.
		if [ "$_n" -ge 50 ] || ! grep -Eq "Couldn't connect|Unable to open file descriptor" "$tmpd/pp_cli"; then
			kill "$_srv" 2>/dev/null
			wait "$_srv"
			sed 's/^/    # client: /' "$tmpd/pp_cli"
			sed 's/^/    # server: /' "$tmpd/pp_srv"
			rxe_counters_show rxeu0 rxeu1
			return 1
		fi
		sleep 0.2
	done
	if ! wait "$_srv"; then
		sed 's/^/    # server: /' "$tmpd/pp_srv"
		rxe_counters_show rxeu0 rxeu1
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

# iproute2's `rdma res` and `rdma statistic` through our netlink server:
# the counts are those of the device's object tables (its sysfs
# `resources`), with the rdma_cm ids on it and the files with a context;
# `res show qp|cq|mr|pd` lists each object; the counters are the configfs
# `counters` file's, name for name, in order.
res_of() { # dev kind: the count the last `rdma res show DEV` printed
	awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$tmpd/res_$1"
}
res_matches_sysfs() { # dev
	if ! rdma res show "$1" > "$tmpd/res_$1" 2>&1 ||
		! grep -Eq "^[0-9]+: $1: pd [0-9]+ cq [0-9]+ qp [0-9]+ cm_id [0-9]+ mr [0-9]+ ctx [0-9]+ srq [0-9]+ *$" "$tmpd/res_$1"; then
		sed 's/^/    # /' "$tmpd/res_$1"
		return 1
	fi
	for _k in pd cq qp srq mr; do
		_want=$(awk -v k="$_k" '$1 == k { print $2 }' "/sys/class/rdma_rs/$1/resources")
		_got=$(res_of "$1" "$_k")
		[ "$_got" = "$_want" ] || { echo "$1 $_k: rdma res $_got, sysfs $_want"; return 1; }
	done
}
rdma_res_summary() {
	rdma res > "$tmpd/res_all" 2>&1 || { sed 's/^/    # /' "$tmpd/res_all"; return 1; }
	if ! grep -Eq "^[0-9]+: rxeu0: pd " "$tmpd/res_all" || ! grep -Eq "^[0-9]+: rxeu1: pd " "$tmpd/res_all"; then
		sed 's/^/    # /' "$tmpd/res_all"
		return 1
	fi
	res_matches_sysfs rxeu0 || return 1
	res_matches_sysfs rxeu1 || return 1
	[ "$(res_of rxeu1 ctx)" = 0 ] && [ "$(res_of rxeu1 cm_id)" = 0 ] && return 0
	sed 's/^/    # /' "$tmpd/res_rxeu1"
	return 1
}
ktap_check "rdma_res" rdma_res_summary
# An ibv_rc_pingpong server makes its context, PD, MR, CQ and RC QP (moved
# to INIT on port 1), then waits for its client: the counts go up by one
# each, the lists show them; when it is killed they go back.
lines_of() { # dev file: how many lines of DEV the list has
	grep -Ec "^(dev|link) $1[/ ]" "$2"
}
res_during_pingpong() {
	res_matches_sysfs rxeu1 || return 1
	cp "$tmpd/res_rxeu1" "$tmpd/res_idle"
	_qp0=$(res_of rxeu1 qp) _pd0=$(res_of rxeu1 pd)
	gb=$(gid_of rxeu1 0a4f:0102) || { echo "no IPv4 GID"; return 1; }
	ip netns exec uvy ibv_rc_pingpong -d rxeu1 -g "$gb" -n 10 > "$tmpd/pp_srv" 2>&1 &
	_srv=$!
	_n=0
	until res_matches_sysfs rxeu1 > /dev/null && [ "$(res_of rxeu1 ctx)" = 1 ] &&
		[ "$(res_of rxeu1 qp)" = $((_qp0 + 1)) ] && [ "$(res_of rxeu1 pd)" = $((_pd0 + 1)) ]; do
		_n=$((_n + 1))
		if [ "$_n" -ge 50 ]; then
			kill "$_srv"
			wait "$_srv"
			echo "the server's objects never showed"
			sed 's/^/    # /' "$tmpd/res_rxeu1" "$tmpd/pp_srv"
			return 1
		fi
		sleep 0.2
	done
	_bad=0
	rdma res show qp link rxeu1 > "$tmpd/qps" 2>&1 || _bad=1
	for _k in cq mr pd ctx; do
		rdma res show "$_k" > "$tmpd/objs_$_k" 2>&1 || _bad=1
	done
	kill "$_srv"
	wait "$_srv"
	[ "$_bad" = 0 ] || { sed 's/^/    # /' "$tmpd/qps" "$tmpd/objs_"*; return 1; }
	# Every QP once; the server's RC QP in INIT on port 1, with its PD and
	# the server's PID (ip netns exec execs it: $_srv).
	if [ "$(lines_of rxeu1 "$tmpd/qps")" != $((_qp0 + 1)) ] ||
		! grep -Eq "^link rxeu1/1 lqpn [0-9]+ rqpn 0 type RC state INIT rq-psn [0-9]+ sq-psn [0-9]+ path-mig-state MIGRATED pdn [0-9]+ pid $_srv comm ibv_rc_pingpong *$" "$tmpd/qps"; then
		echo "rdma res show qp:"
		sed 's/^/    # /' "$tmpd/qps" "$tmpd/res_rxeu1"
		return 1
	fi
	for _k in cq mr pd; do
		_want=$(res_of rxeu1 "$_k")
		[ "$(lines_of rxeu1 "$tmpd/objs_$_k")" = "$_want" ] ||
			{ echo "rdma res show $_k: not $_want objects"; sed 's/^/    # /' "$tmpd/objs_$_k"; return 1; }
	done
	# The server's MR, CQ and PD are its own (PID and context); its
	# context is the device's one.
	if ! grep -Eq "^dev rxeu1 mrn [0-9]+ .*mrlen 4096 .*pid $_srv comm ibv_rc_pingpong" "$tmpd/objs_mr" ||
		! grep -Eq "^dev rxeu1 cqn [0-9]+ cqe [0-9]+ users 2 .*ctxn [0-9]+ pid $_srv " "$tmpd/objs_cq" ||
		! grep -Eq "^dev rxeu1 .*pdn [0-9]+ .*ctxn [0-9]+ pid $_srv " "$tmpd/objs_pd" ||
		[ "$(lines_of rxeu1 "$tmpd/objs_ctx")" != 1 ] ||
		! grep -Eq "^dev rxeu1 ctxn [0-9]+ pid $_srv comm ibv_rc_pingpong *$" "$tmpd/objs_ctx"; then
		sed 's/^/    # /' "$tmpd/objs_mr" "$tmpd/objs_cq" "$tmpd/objs_pd" "$tmpd/objs_ctx"
		return 1
	fi
	# Back to the counts before, once the file is closed.
	_n=0
	until res_matches_sysfs rxeu1 > /dev/null && cmp -s "$tmpd/res_rxeu1" "$tmpd/res_idle"; do
		_n=$((_n + 1))
		[ "$_n" -ge 50 ] && { sed 's/^/    # /' "$tmpd/res_rxeu1"; return 1; }
		sleep 0.2
	done
}
ktap_check "rdma_res_objects" res_during_pingpong
# `rdma res show srq`: the SRQ of an ibv_srq_pingpong server (-q 4) with
# its type, PD and the four QPs that use it ("lqpn" lists runs "A-B").
res_srq() {
	gb=$(gid_of rxeu1 0a4f:0102) || { echo "no IPv4 GID"; return 1; }
	ip netns exec uvy ibv_srq_pingpong -d rxeu1 -g "$gb" -q 4 -n 10 > "$tmpd/pp_srv" 2>&1 &
	_srv=$!
	_n=0
	until rdma res show rxeu1 > "$tmpd/res_rxeu1" 2>&1 && [ "$(res_of rxeu1 srq)" = 1 ] &&
		[ "$(res_of rxeu1 qp)" -ge 5 ]; do
		_n=$((_n + 1))
		[ "$_n" -lt 50 ] || break
		sleep 0.2
	done
	rdma res show srq > "$tmpd/srqs" 2>&1
	_rc=$?
	kill "$_srv"
	wait "$_srv"
	if [ "$_rc" = 0 ] && [ "$(lines_of rxeu1 "$tmpd/srqs")" = 1 ] &&
		awk '$2 == "rxeu1" && / srqn [0-9]+ type BASIC / && / pdn [0-9]+/ {
			for (i = 1; i < NF; i++) if ($i == "lqpn") list = $(i + 1)
			n = split(list, runs, ",")
			for (j = 1; j <= n; j++) {
				if (split(runs[j], ab, "-") == 2) qps += ab[2] - ab[1] + 1; else qps++
			}
			found = 1
		} END { exit !(found && qps == 4) }' "$tmpd/srqs"; then
		return 0
	fi
	sed 's/^/    # /' "$tmpd/srqs" "$tmpd/res_rxeu1"
	return 1
}
ktap_check "rdma_res_srq" res_srq
# Objects of kinds not listed: an errno, not a crash.
rdma_res_unlisted() {
	rdma res show cm_id > "$tmpd/cm_id" 2>&1 && { echo "rdma res show cm_id succeeded"; return 1; }
	grep -q "Operation not supported" "$tmpd/cm_id" && return 0
	sed 's/^/    # /' "$tmpd/cm_id"
	return 1
}
ktap_check "rdma_res_unlisted" rdma_res_unlisted
stat_of() { # dev: "name value" lines of `rdma statistic show link DEV/1`
	rdma statistic show link "$1/1" |
		awk '$1 == "link" { for (i = 3; i < NF; i += 2) print $i, $(i + 1) }'
}
statistic_matches() { # dev file: save the counters to FILE
	stat_of "$1" > "$2" && [ "$(wc -l < "$2")" -gt 10 ] && cmp -s "$2" "$rxe_cfs/$1/counters" && return 0
	echo "rdma statistic show link $1/1 and the counters file differ:"
	diff "$2" "$rxe_cfs/$1/counters" | sed 's/^/    # /'
	return 1
}
rdma_statistic() {
	if ! rdma statistic show > "$tmpd/stat_all" 2>&1 || ! rdma statistic > /dev/null 2>&1 ||
		! grep -q "^link rxeu0/1 sent_pkts [0-9]* rcvd_pkts " "$tmpd/stat_all" ||
		! grep -q "^link rxeu1/1 sent_pkts " "$tmpd/stat_all"; then
		sed 's/^/    # /' "$tmpd/stat_all"
		return 1
	fi
	statistic_matches rxeu0 "$tmpd/stat0"
}
ktap_check "rdma_statistic" rdma_statistic
ktap_check "rc_pingpong" pingpong ibv_rc_pingpong -n 300 -s 4096 -c
# The client's side sent at least a packet per message and received its
# server's, and the two views still agree.
statistic_moved() {
	statistic_matches rxeu0 "$tmpd/stat1" || return 1
	_s0=$(awk '$1 == "sent_pkts" { print $2 }' "$tmpd/stat0")
	_s1=$(awk '$1 == "sent_pkts" { print $2 }' "$tmpd/stat1")
	_r0=$(awk '$1 == "rcvd_pkts" { print $2 }' "$tmpd/stat0")
	_r1=$(awk '$1 == "rcvd_pkts" { print $2 }' "$tmpd/stat1")
	[ $((_s1 - _s0)) -ge 300 ] && [ $((_r1 - _r0)) -ge 300 ] && return 0
	echo "sent_pkts $_s0 -> $_s1, rcvd_pkts $_r0 -> $_r1"
	return 1
}
ktap_check "rdma_statistic_moved" statistic_moved
ktap_check "rc_pingpong_events" pingpong ibv_rc_pingpong -n 100 -s 100 -e -c
# The ibv_wr_* API (-N): the extended CREATE_QP.
ktap_check "rc_pingpong_wr_api" pingpong ibv_rc_pingpong -n 100 -s 4096 -N -c
ktap_check "uc_pingpong" pingpong ibv_uc_pingpong -n 100 -s 1024 -c
ktap_check "ud_pingpong" pingpong ibv_ud_pingpong -n 100 -s 1024 -c
ktap_check "srq_pingpong" pingpong ibv_srq_pingpong -n 50 -q 4 -r 32 -s 1024 -c
ktap_check "ib_write_bw" perftest 100 ib_write_bw -s 16384
ktap_check "ib_read_bw" perftest 100 ib_read_bw -s 16384
ktap_check "ib_send_bw" perftest 100 ib_send_bw -s 16384
ktap_check "ib_atomic_bw" perftest 200 ib_atomic_bw
ktap_check "ib_send_lat" perftest 200 ib_send_lat -s 64
ktap_check "nothing_left_pingpong" cmp -s "$tmpd/res0" "$res"
ktap_check "device_b_removed" rxe_item_remove rxeu1

# rdma link add/delete: NEWLINK and DELLINK of our netlink server, served
# by rdma_rs_rxe's link type "rxe", on veths of the initial namespace and
# of uvx. rdma prints the errno's text (perror).
netns_veth - veth_l uvx veth_lx && netns_veth - veth_m uvx veth_mx &&
	ip link set veth_l up && ip link set veth_m up &&
	ip -n uvx link set veth_lx up && ip -n uvx link set veth_mx up
rdma_fails() { # errno-text rdma-args...: rdma fails, saying errno-text
	_want=$1
	shift
	if rdma "$@" > "$tmpd/rdma_err" 2>&1; then
		echo "rdma $* succeeded"
		return 1
	fi
	grep -q "$_want" "$tmpd/rdma_err" || { sed 's/^/    # /' "$tmpd/rdma_err"; return 1; }
}
link_add() {
	rdma link add rxel0 type rxe netdev veth_l || return 1
	cleanup_add rdma link delete rxel0
	[ -d /sys/class/infiniband/rxel0 ] && [ -d /sys/class/rdma_rs/rxel0 ]
}
ktap_check "link_add" link_add
link_listed() {
	rdma link show > "$tmpd/links" 2>&1 && ibv_devices > "$tmpd/devices" 2>&1 &&
		grep -Eq "^link rxel0/1 .*netdev veth_l( |$)" "$tmpd/links" &&
		grep -Eq "^[[:space:]]*rxel0[[:space:]]+[0-9a-f]{16}$" "$tmpd/devices" && return 0
	sed 's/^/    # /' "$tmpd/links" "$tmpd/devices"
	return 1
}
ktap_check "link_listed" link_listed
link_devinfo() {
	ibv_devinfo -d rxel0 > "$tmpd/devinfo_l" 2>&1 &&
		grep -Eq "^hca_id:[[:space:]]+rxel0$" "$tmpd/devinfo_l" &&
		grep -Eq "link_layer:[[:space:]]+Ethernet$" "$tmpd/devinfo_l" && return 0
	sed 's/^/    # /' "$tmpd/devinfo_l"
	return 1
}
ktap_check "link_devinfo" link_devinfo
# A name taken (on another netdev), a netdev taken (under another name),
# no such netdev, no such type, a name template: refused, nothing made.
link_refused() {
	rdma_fails "File exists" link add rxel0 type rxe netdev veth_m &&
		rdma_fails "File exists" link add rxel9 type rxe netdev veth_l &&
		rdma_fails "No such device" link add rxel9 type rxe netdev nosuch0 &&
		rdma_fails "Invalid argument" link add rxel9 type nosuch netdev veth_m &&
		rdma_fails "Invalid argument" link add "rxel%d" type rxe netdev veth_m || return 1
	# (rxel1: what the template would have made.)
	for _d in rxel9 rxel1 "rxel%d"; do
		[ ! -e "/sys/class/infiniband/$_d" ] || { echo "a refused link made $_d"; return 1; }
	done
	[ -d /sys/class/infiniband/rxel0 ] || { echo "rxel0 went"; return 1; }
}
ktap_check "link_add_refused" link_refused
# The netdev is looked up in the requester's namespace, as the C core
# does: veth_lx lives in uvx only, so the initial namespace does not find
# it and uvx does.
link_netns() {
	rdma_fails "No such device" link add rxen0 type rxe netdev veth_lx || return 1
	ip netns exec uvx rdma link add rxen0 type rxe netdev veth_lx || return 1
	ip netns exec uvx rdma link show > "$tmpd/links_ns" 2>&1 || return 1
	if ! grep -Eq "^link rxen0/1 .*netdev veth_lx( |$)" "$tmpd/links_ns" ||
		[ ! -d /sys/class/infiniband/rxen0 ]; then
		sed 's/^/    # /' "$tmpd/links_ns"
		ip netns exec uvx rdma link delete rxen0
		return 1
	fi
	ip netns exec uvx rdma link delete rxen0 && [ ! -e /sys/class/infiniband/rxen0 ]
}
ktap_check "link_add_netns" link_netns
# A configfs item's device is configfs's: DELLINK refuses it.
link_delete_configfs() {
	rxe_item_new rxeuc && echo veth_m > "$rxe_cfs/rxeuc/netdev" &&
		echo 1 > "$rxe_cfs/rxeuc/enable" || return 1
	rdma_fails "Invalid argument" link delete rxeuc || return 1
	[ -d /sys/class/infiniband/rxeuc ] && [ "$(cat "$rxe_cfs/rxeuc/enable")" = 1 ] || return 1
	rxe_item_remove rxeuc
}
ktap_check "link_delete_configfs_refused" link_delete_configfs
link_delete() {
	rdma link delete rxel0 || return 1
	rdma link show > "$tmpd/links" 2>&1 && ibv_devices > "$tmpd/devices" 2>&1 || return 1
	if grep -q rxel0 "$tmpd/links" "$tmpd/devices" || [ -e /sys/class/infiniband/rxel0 ] ||
		[ -e /sys/class/rdma_rs/rxel0 ]; then
		echo "rxel0 still there"
		sed 's/^/    # /' "$tmpd/links" "$tmpd/devices"
		return 1
	fi
	# The netdev is free again.
	rdma link add rxel0 type rxe netdev veth_l && rdma link delete rxel0
}
ktap_check "link_delete" link_delete
ktap_check "link_delete_again_fails" sh -c "! rdma link delete rxel0"
# The netdev unregistered: the link's device goes with it (as a configfs
# item's does), and so does its name.
gone_within() { # path: waits up to 10 s for it to go
	_n=0
	while [ -e "$1" ]; do
		_n=$((_n + 1))
		[ "$_n" -lt 100 ] || { echo "$1 still there"; return 1; }
		sleep 0.1
	done
}
link_netdev_gone() {
	rdma link add rxel1 type rxe netdev veth_m || return 1
	ip link del veth_m || return 1
	gone_within /sys/class/infiniband/rxel1 || return 1
	rdma link show > "$tmpd/links" 2>&1 || return 1
	! grep -q rxel1 "$tmpd/links" || { echo "rxel1 listed"; return 1; }
	rdma link add rxel1 type rxe netdev veth_l
}
ktap_check "link_netdev_gone" link_netdev_gone

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
# rdma_rs_rxe unloaded with a link's device (rxel1) alive: it goes too.
rxe_unload_link() {
	[ -d /sys/class/rdma_rs/rxel1 ] || { echo "rxel1 not there"; return 1; }
	rmmod rdma_rs_rxe || return 1
	! [ -e /sys/class/rdma_rs/rxel1 ]
}
ktap_check "unload_rxe_with_link" rxe_unload_link

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
