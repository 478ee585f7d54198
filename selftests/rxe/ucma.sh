#!/bin/sh
# rdma_rs_ucm: unchanged librdmacm (rdma-core 44) and its tools connect
# through /dev/infiniband/rdma_cm on our rdma_cm, between our rxe devices
# in two network namespaces, with the kernel's C stack absent and kept
# from autoloading: rping (data verified), ucmatose (several connections)
# rdma_server/rdma_client (MIGRATE_ID), perftest over rdma_cm (-R) and
# udaddy and mckey (UD ids: SIDR, multicast);
# and our kernel ULPs against those tools on our stack; then a hostile
# program's raw write() commands (ucma_user): malformed framing, foreign,
# stale and made-up handles, events, MIGRATE_ID, and ids and files ended
# at every step of a connection, with nothing left after.
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh
. ../lib/cmtools.sh

ktap_plan

# librdmacm and libibverbs ask the RDMA netlink family first; opening it
# would load the C ib_core, whose answer (no devices) would hide ours.
nocore=/etc/modprobe.d/rdma-rs-no-ib-core.conf
mkdir -p /etc/modprobe.d
printf 'install ib_core /bin/false\ninstall ib_uverbs /bin/false\ninstall rdma_ucm /bin/false\n' > "$nocore"
cleanup_add rm -f "$nocore"
for m in rdma_ucm rdma_rxe ib_uverbs rdma_cm iw_cm ib_cm ib_core; do
	modprobe -r "$m" 2>/dev/null
done
load() {
	! grep -q "^ib_core " /proc/modules &&
		modprobe rdma_rs_rxe && modprobe rdma_rs_uverbs && modprobe rdma_rs_ucm
}
ktap_check "load" load
cleanup_add modprobe -r rdma_rs_ucm

rdma_cm_node() {
	st=$(stat -c '%F %a' /dev/infiniband/rdma_cm) || return 1
	[ "$st" = "character special file 666" ] || { echo "node: $st"; return 1; }
	grep -q " rdma_cm$" /proc/misc || { echo "no misc device rdma_cm"; return 1; }
}
ktap_check "rdma_cm_node" rdma_cm_node

# What librdmacm checks before it opens the node: RDMA netlink's
# GET_CHARDEV of type "rdma_cm" (asked first: name, device number, ABI)
# and, failing that, the misc device's abi_version in sysfs.
rdma_cm_abi() {
	v=$(cat /sys/class/misc/rdma_cm/abi_version) || return 1
	[ "$v" = 4 ] || { echo "sysfs abi_version $v"; return 1; }
	want="rdma_cm $(cat /sys/class/misc/rdma_cm/dev) 4"
	got=$(python3 - <<'PY'
import socket, struct
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 20)  # NETLINK_RDMA
name = b"rdma_cm\0"
attr = struct.pack("=HH", 4 + len(name), 69) + name + b"\0" * (-len(name) % 4)
hdr = struct.pack("=IHHII", 16 + len(attr), 0x1400 + 15, 1, 7, 0)  # GET_CHARDEV
s.send(hdr + attr)
msg = s.recv(8192)
length, kind = struct.unpack_from("=IH", msg)
if kind == 2:  # NLMSG_ERROR
    print("error", struct.unpack_from("=i", msg, 16)[0])
    raise SystemExit
a, off = {}, 16
while off + 4 <= length:
    alen, atype = struct.unpack_from("=HH", msg, off)
    a[atype] = msg[off + 4:off + alen]
    off += (alen + 3) & ~3
dev = struct.unpack("=Q", a[72])[0]
major, minor = (dev & 0xfff00) >> 8, (dev & 0xff) | ((dev >> 12) & 0xfff00)
print(a[70].rstrip(b"\0").decode(), "%d:%d" % (major, minor), struct.unpack("=Q", a[71])[0])
PY
)
	[ "$got" = "$want" ] || { echo "netlink: '$got', want '$want'"; return 1; }
}
ktap_check "rdma_cm_abi" rdma_cm_abi

netns_pair ucx ucy 10.79.5
cleanup_add netns_cleanup ucx ucy
devices() {
	rxe_bind ucx veth_a rxec0 && rxe_bind ucy veth_b rxec1
}
ktap_check "devices" devices
cleanup_add rxe_item_remove rxec0 rxec1

# The rdma_cm ids on DEV, as `rdma res` counts them (our netlink server).
cm_ids() { # dev
	rdma res show "$1" | awk '{ for (i = 1; i < NF; i++) if ($i == "cm_id") print $(i + 1) }'
}

# Runs a server in ucy and its client in ucx, both bounded. A server that
# binds rxec1's address is waited for until its listener is on rxec1 (a
# client that came first would be rejected, and a retried ucmatose would
# leave the server more requests than it expects); one that binds the
# wildcard, until its client is no longer refused. Outputs in $tmpd/srv
# and $tmpd/cli.
pair() { # "server command" "client command" [bound]
	ip netns exec ucy timeout 120 sh -c "$1" > "$tmpd/srv" 2>&1 &
	_srv=$!
	if [ -n "${3:-}" ]; then
		_n=0
		until [ "$(cm_ids rxec1)" -ge 1 ] 2>/dev/null; do
			_n=$((_n + 1))
			if [ "$_n" -ge 100 ]; then
				echo "no listener on rxec1"
				kill "$_srv" 2>/dev/null
				wait "$_srv"
				sed 's/^/    # server: /' "$tmpd/srv"
				return 1
			fi
			sleep 0.1
		done
	fi
	_n=0
	until ip netns exec ucx timeout 100 sh -c "$2" > "$tmpd/cli" 2>&1; do
		_n=$((_n + 1))
		# A client that came before the server's listener is rejected;
		# perftest says so as "Unexpected CM event bl blka 8" (REJECTED).
		if [ "$_n" -ge 50 ] || ! grep -Eqi "reject|refused|unreachable|error 111|ECONNREFUSED|CM event bl blka 8$" "$tmpd/cli"; then
			kill "$_srv" 2>/dev/null
			wait "$_srv"
			sed 's/^/    # client: /' "$tmpd/cli"
			sed 's/^/    # server: /' "$tmpd/srv"
			return 1
		fi
		sleep 0.2
	done
	if ! wait "$_srv"; then
		sed 's/^/    # server: /' "$tmpd/srv"
		return 1
	fi
}

# rping: COUNT pings of SIZE bytes, each verified by the client (-V) and
# printed by both sides; the server serves one client and exits.
rping_pair() { # size count
	pair "rping -s -a 10.79.5.2 -p 7471 -S $1 -C $2 -v" \
		"rping -c -a 10.79.5.2 -p 7471 -S $1 -C $2 -V -v" bound || return 1
	_nc=$(grep -c '^ping data: rdma-ping-' "$tmpd/cli")
	_ns=$(grep -c '^server ping data: rdma-ping-' "$tmpd/srv")
	if [ "$_nc" != "$2" ] || [ "$_ns" != "$2" ]; then
		echo "client printed $_nc pings, server $_ns, of $2"
		sed 's/^/    # client: /' "$tmpd/cli" | tail -5
		return 1
	fi
}
ktap_check "rping_small" rping_pair 64 20
ktap_check "rping_large" rping_pair 32768 5

# ucmatose: several connections at once, messages both ways on each, then
# disconnect; both sides exit 0 having seen every connection.
ucmatose_pair() {
	pair "ucmatose -b 10.79.5.2 -p 7473 -c 4 -C 10" \
		"ucmatose -s 10.79.5.2 -p 7473 -c 4 -C 10" bound || return 1
	if ! grep -q "test complete" "$tmpd/cli" || ! grep -q "test complete" "$tmpd/srv"; then
		sed 's/^/    # client: /' "$tmpd/cli"
		sed 's/^/    # server: /' "$tmpd/srv"
		return 1
	fi
}
ktap_check "ucmatose" ucmatose_pair

# rdma_server and rdma_client: synchronous ids (librdmacm moves each new
# id to an event channel of its own, MIGRATE_ID), one message each way.
rdma_server_client() {
	pair "rdma_server -s 10.79.5.2 -p 7475" "rdma_client -s 10.79.5.2 -p 7475" bound || return 1
	if ! grep -q "rdma_server: end 0" "$tmpd/srv" || ! grep -q "rdma_client: end 0" "$tmpd/cli"; then
		sed 's/^/    # client: /' "$tmpd/cli"
		sed 's/^/    # server: /' "$tmpd/srv"
		return 1
	fi
}
ktap_check "rdma_server_client" rdma_server_client

# perftest over rdma_cm (-R): the QPs connect through librdmacm.
perftest_cm() { # N program
	pair "$2 -d rxec1 -R -n $1 -F" "$2 -d rxec0 -R -n $1 -F 10.79.5.2" || return 1
	perftest_completed "$tmpd/cli" "$1" ||
		{ sed 's/^/    # client: /' "$tmpd/cli"; return 1; }
}
ktap_check "ib_send_lat_cm" perftest_cm 200 ib_send_lat
ktap_check "ib_write_bw_cm" perftest_cm 100 "ib_write_bw -s 16384"

# udaddy: UD ids resolve the server's service by SIDR (two connections),
# ten datagrams each way on each, every one waited for by both sides.
udaddy_pair() {
	pair "udaddy -b 10.79.5.2 -c 2 -C 10" "udaddy -s 10.79.5.2 -b 10.79.5.1 -c 2 -C 10" \
		bound || return 1
	if ! grep -q "data transfers complete" "$tmpd/cli" ||
		! grep -q "data transfers complete" "$tmpd/srv"; then
		sed 's/^/    # client: /' "$tmpd/cli"
		sed 's/^/    # server: /' "$tmpd/srv"
		return 1
	fi
}
ktap_check "udaddy" udaddy_pair

# mckey: UD ids join an IPv4 multicast group (JOIN_IP_MCAST), librdmacm
# attaches their QPs, the sender sends COUNT datagrams to the group; each
# receiver's QP must complete all of them (mckey waits for every one) and
# both sides must leave cleanly. Receivers start first and are waited for
# until the host is a member of the group in their namespace.
member() { # netns group-in-hex
	ip netns exec "$1" cat /proc/net/igmp | grep -q "$2"
}
mckey_run() { # group sender-args "ns:receiver-args"...
	_grp=$1 _snd=$2
	shift 2
	_hex=$(echo "$_grp" | awk -F. '{ printf "%02X%02X%02X%02X", $4, $3, $2, $1 }')
	_pids='' _i=0
	for _r in "$@"; do
		_i=$((_i + 1))
		# shellcheck disable=SC2086 # the receiver's arguments, split
		ip netns exec "${_r%%:*}" timeout 60 mckey -m "$_grp" -C 10 ${_r#*:} \
			> "$tmpd/mc_r$_i" 2>&1 &
		_pids="$_pids $!"
		_n=0
		until member "${_r%%:*}" "$_hex"; do
			_n=$((_n + 1))
			if [ "$_n" -ge 100 ]; then
				echo "receiver $_i never joined $_grp"
				cat "$tmpd/mc_r$_i"
				# shellcheck disable=SC2086 # one pid a word
				kill $_pids 2>/dev/null
				return 1
			fi
			sleep 0.1
		done
	done
	# shellcheck disable=SC2086 # the sender's arguments, split
	if ! ip netns exec ucx timeout 60 mckey -m "$_grp" -C 10 -s $_snd > "$tmpd/mc_s" 2>&1 ||
		! grep -q "test complete" "$tmpd/mc_s"; then
		sed 's/^/    # sender: /' "$tmpd/mc_s"
		# shellcheck disable=SC2086 # one pid a word
		kill $_pids 2>/dev/null
		return 1
	fi
	_i=0 _bad=0
	for _p in $_pids; do
		_i=$((_i + 1))
		if ! wait "$_p" || ! grep -q "data transfers complete" "$tmpd/mc_r$_i"; then
			sed "s/^/    # receiver $_i: /" "$tmpd/mc_r$_i"
			_bad=1
		fi
	done
	return "$_bad"
}
# A receiver in the other namespace.
ktap_check "mckey" mckey_run 239.5.5.1 "-b 10.79.5.1" "ucy:-b 10.79.5.2"
# Two receivers of two ids each, one of them on the sender's own device
# (delivered by multicast loopback), and a send-only sender (-o: no
# attach, no IP membership).
ktap_check "mckey_fanout_send_only" mckey_run 239.5.5.2 "-b 10.79.5.1 -o" \
	"ucy:-b 10.79.5.2 -c 2" "ucx:-b 10.79.5.1 -c 2"

# Our kernel ULPs and user space on our stack, each side on a device of
# ours: the test module that speaks rping's, rdma_server's and
# ucmatose's protocols (modules/rdma_rxe_cmtools_test.rs; cm.sh runs it
# against the kernel's stack) on rxc (10.85.0.2, namespace cmc), and
# rdma-core's tools through rdma_rs_ucm on rxu (10.85.0.1), both ways.
ulp_setup() {
	netns_add cmc && netns_veth - dci cmc dcc && netns_addr - dci 10.85.0.1/24 &&
		netns_addr cmc dcc 10.85.0.2/24 && rxe_bind cmc dcc rxc &&
		rxe_item_new rxu && echo dci > "$rxe_cfs/rxu/netdev" && echo 1 > "$rxe_cfs/rxu/enable"
}
ktap_check "ulp_devices" ulp_setup
cleanup_add netns_cleanup cmc
cleanup_add ip link del dci
cleanup_add rxe_item_remove rxc rxu
cleanup_add rmmod rdma_rxe_cmtools_test
cmtools_start 10.85.0.1 10.85.0.2
ktap_module rdma_rxe_cmtools_test
ktap_check "ulp_and_user_space" cmtools_done

# Hostile user space (selftests/rxe/ucma_user.c): malformed commands,
# foreign, stale and made-up handles, the event queue, MIGRATE_ID.
node=/dev/infiniband/rdma_cm
ktap_check "abi_framing" ucma_user framing "$node"
ktap_check "abi_handles" ip netns exec ucx ucma_user handles "$node"
ktap_check "abi_events" ip netns exec ucx ucma_user events "$node"
# Multicast joins of UD ids: their events, IP membership, LEAVE_MCAST.
ktap_check "abi_mcast" ip netns exec ucx ucma_user mcast "$node"
# Where the C ucma answers another errno (an id that does not exist:
# ENOENT there).
ktap_check "abi_c_errnos" ucma_user c_errnos "$node"
# SIDR between UD ids (the passive side in ucy): accepted (the service's
# QPN, Q_Key, address and private data), rejected, unread with its
# listener destroyed, to an RC listener's port and to nobody (both
# UNSUPPORTED: the port spaces' service IDs differ); an RC REQ to a UD
# listener.
for _d in /var/run/netns /run/netns; do
	[ -e "$_d/ucy" ] && break
done
ktap_check "abi_sidr" ip netns exec ucx timeout 90 ucma_user sidr "$node" "$_d/ucy"
# Ids destroyed and files closed at each step of a connection, the passive
# side in ucy (a child of the program), the active in ucx: the peer sees
# its connection end (REJECTED or DISCONNECTED, bounded), and no rdma_cm
# id is left on either device.
# What each step saw (events, times) is printed even when it passes (fd 3:
# the script's output, which the check function does not capture).
exec 3>&1
lc() { # step
	ip netns exec ucx timeout 90 ucma_user lifecycle "$node" "$_d/ucy" "$1" > "$tmpd/lc" 2>&1
	_rc=$?
	sed 's/^/    # /' "$tmpd/lc" >&3
	return "$_rc"
}
# Destroyed with its ADDR_RESOLVED, then its ROUTE_RESOLVED, unread: the
# events go with it.
ktap_check "lc_addr_destroy" lc addr_destroy
ktap_check "lc_route_destroy" lc route_destroy
# Destroyed right after CONNECT: the REJ (TIMEOUT) reaches the passive
# side's new id, which reports REJECTED.
ktap_check "lc_connect_destroy" lc connect_destroy
# Two requests never read, the listener destroyed, or its file closed:
# both active ids REJECTED.
ktap_check "lc_listener_destroy" lc listener_destroy
ktap_check "lc_listener_close" lc listener_close
# The active side's process exits after CONNECT_RESPONSE (no RTU), and
# the passive's after its REP: the other side's connection ends
# (DISCONNECTED or REJECTED) within 30 s.
ktap_check "lc_active_exit" lc active_exit
ktap_check "lc_passive_exit" lc passive_exit
# Ids with unread events and a listener, then the file closed.
ktap_check "lc_unread_close" lc unread_close
# After all of it, no rdma_cm id is left on either device.
no_cm_ids() {
	_n=0
	while :; do
		_left=
		for _dev in rxec0 rxec1; do
			if ! rdma res show "$_dev" > "$tmpd/res" 2>&1 ||
				! grep -Eq "^[0-9]+: $_dev: .* cm_id 0 " "$tmpd/res"; then
				_left="$_left $(cat "$tmpd/res")"
			fi
		done
		[ -z "$_left" ] && return 0
		_n=$((_n + 1))
		if [ "$_n" -ge 50 ]; then
			echo "left after 10 s:$_left"
			return 1
		fi
		sleep 0.2
	done
}
ktap_check "no_cm_id_left" no_cm_ids

ktap_finish
