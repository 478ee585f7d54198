#!/bin/sh
# Peer-Direct: memory regions on a peer memory client's memory, registered
# from user space (peer_user through /dev/peer_mem_test) on our rxe, moved
# by RDMA and checked through the client's own view; invalidation under
# traffic; clients that decline, fail or require invalidation (the C ABI
# and misbehaving clients: clients.sh); the sysfs statistics; a client unloaded and a
# device removed under live regions, and those races run concurrently.
# Both example clients: C (peer_example_c, also as an UNMAPS client) and
# Rust (peer_example_rust).
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/netns.sh
. ../lib/rxe.sh

ib_peers=/sys/kernel/infiniband/memory_peers
mm_peers=/sys/kernel/mm/memory_peers

setup() {
	modprobe rdma_rs_rxe && modprobe peer_mem &&
		netns_add pm_a pm_b && netns_veth pm_a pmv0 pm_b pmv1 &&
		netns_addr pm_a pmv0 10.79.1.1/24 && netns_addr pm_b pmv1 10.79.1.2/24 &&
		rxe_bind pm_a pmv0 pma && rxe_bind pm_b pmv1 pmb &&
		modprobe peer_mem_test && modprobe peer_example_c &&
		modprobe peer_example_rust && modprobe rdma_swdev &&
		[ -c /dev/peer_mem_test ] && [ -c /dev/peer_example_c ] && [ -c /dev/peer_example_rust ]
}

# stat CLIENT FILE: a statistics file of CLIENT (the two paths must agree).
stat() {
	_a=$(cat "$ib_peers/$1/$2") && _b=$(cat "$mm_peers/$1/$2") || return 1
	[ "$_a" = "$_b" ] || { echo "$1/$2: $_a under infiniband, $_b under mm" >&2; return 1; }
	echo "$_a"
}

# snap CLIENT: the six counters, one line.
snap() {
	for _f in num_alloc_mrs num_dealloc_mrs num_reg_pages num_dereg_pages \
		num_reg_bytes num_dereg_bytes num_free_callbacks; do
		printf '%s ' "$(stat "$1" "$_f")"
	done
}

sysfs_dirs() {
	for c in peer_example_c peer_example_rust; do
		for f in version num_alloc_mrs num_dealloc_mrs num_reg_pages num_dereg_pages \
			num_reg_bytes num_dereg_bytes num_free_callbacks; do
			stat "$c" "$f" > /dev/null || { echo "no $c/$f"; return 1; }
		done
		[ "$(stat "$c" version)" = "1.0" ] || { echo "$c version '$(stat "$c" version)'"; return 1; }
	done
}

# counted CLIENT MIN_ALLOC FREE_CALLBACKS CMD...: runs CMD and checks what the
# client's statistics say of it: at least MIN_ALLOC regions built and as many
# released, pages and bytes given back as taken, at least a page a region,
# and exactly FREE_CALLBACKS invalidations ("-": any).
counted() {
	_c=$1 _min=$2 _fc=$3
	shift 3
	_before=$(snap "$_c") || return 1
	"$@" || return 1
	_after=$(snap "$_c") || return 1
	echo "$_before $_after" | awk -v c="$_c" -v min="$_min" -v fc="$_fc" '{
		a = $8 - $1; d = $9 - $2; rp = $10 - $3; dp = $11 - $4
		rb = $12 - $5; db = $13 - $6; f = $14 - $7
		printf "%s: +%d built, +%d released, +%d/%d pages, +%d/%d bytes, +%d invalidations\n",
			c, a, d, rp, dp, rb, db, f
		ok = a >= min && a == d && rp == dp && rb == db && rp >= a && (fc == "-" || f == fc)
		exit !ok
	}'
}

# hold CLIENT SIZE ACTION WANT: a process registers SIZE of CLIENT's memory
# and closes the client; ACTION runs (the client unloaded, the device
# removed); then the process's next WRITE and its deregistration must print
# WANT (a grep pattern) and dereg=0.
hold() {
	_d=$(mktemp -d) || return 1
	mkfifo "$_d/in" || return 1
	peer_user hold "/dev/$1" "$2" < "$_d/in" > "$_d/out" 2> "$_d/err" &
	_pid=$!
	exec 3> "$_d/in"
	for _ in $(seq 200); do grep -q ready "$_d/out" && break; sleep 0.1; done
	grep -q ready "$_d/out" || { cat "$_d/out" "$_d/err"; kill "$_pid"; return 1; }
	eval "$3"
	_act=$?
	echo go >&3
	exec 3>&-
	wait "$_pid"
	_rc=$?
	cat "$_d/out"
	[ "$_act" -eq 0 ] && [ "$_rc" -eq 0 ] && grep -q "$4" "$_d/out" && grep -q '^dereg=0' "$_d/out"
}

gone() { [ ! -d "$ib_peers/$1" ] && [ ! -d "$mm_peers/$1" ]; }

unload_c() { rmmod peer_example_c && gone peer_example_c; }
unload_rust() { rmmod peer_example_rust && gone peer_example_rust; }

# Several holders at once, their deregistrations racing the client's
# unload (or the device's removal): ACTION runs while they deregister.
race_holders() {
	_client=$1 _action=$2 _n=4
	_d=$(mktemp -d) || return 1
	for i in $(seq "$_n"); do
		mkfifo "$_d/in$i"
		peer_user hold "/dev/$_client" 64K < "$_d/in$i" > "$_d/out$i" 2> "$_d/err$i" &
		eval "_p$i=\$!"
		eval "exec $((i + 3))> \"$_d/in$i\""
	done
	for i in $(seq "$_n"); do
		for _ in $(seq 200); do grep -q ready "$_d/out$i" && break; sleep 0.1; done
		grep -q ready "$_d/out$i" || { cat "$_d/err$i"; return 1; }
	done
	for i in $(seq "$_n"); do eval "echo go >&$((i + 3))"; eval "exec $((i + 3))>&-"; done
	eval "$_action"
	_act=$?
	_rc=0
	for i in $(seq "$_n"); do
		eval "wait \$_p$i" || _rc=1
		sed "s/^/holder $i: /" "$_d/out$i"
		grep -q '^dereg=0\|^dereg=errno ENODEV' "$_d/out$i" || _rc=1
	done
	[ "$_act" -eq 0 ] && [ "$_rc" -eq 0 ]
}

# The device pma again, after a test removed it.
pma_back() {
	rxe_item_remove pma
	rxe_bind pm_a pmv0 pma && for _ in $(seq 50); do
		[ "$(cat /sys/class/rdma_rs/pma/ports/1/state 2>/dev/null)" = "4: ACTIVE" ] && return 0
		sleep 0.1
	done
	return 1
}

# Everything unloads: the clients' directories go, then the broker.
clients_unload() {
	rmmod peer_mem_test peer_example_c peer_example_rust && gone peer_example_c &&
		gone peer_example_rust && rmmod peer_mem && [ ! -d "$ib_peers" ] && [ ! -d "$mm_peers" ]
}

back_with_c() { pma_back && modprobe peer_example_c; }

# A second client under a registered name: refused, with a log line.
duplicate_name() {
	rmmod peer_example_c || return 1
	dmesg -c > /dev/null
	! modprobe peer_example_c name=peer_example_rust 2> /dev/null &&
		dmesg | grep -q 'peer_example_rust. refused: name already registered'
}

# The device's removal and the client's unload at once.
removal_and_unload() {
	rxe_item_remove pma &
	_rp=$!
	rmmod peer_example_c
	_r=$?
	wait "$_rp" && [ "$_r" -eq 0 ]
}

# Invalidations running (four threads) while pma is removed: the program
# fails (its device went), nothing hangs, every region is released.
inval_vs_removal() {
	peer_user invalidate_mt /dev/peer_example_c 64K 200 4 > /dev/null 2>&1 &
	_pid=$!
	sleep 2
	rxe_item_remove pma
	wait "$_pid"
	pma_back &&
		[ "$(stat peer_example_c num_alloc_mrs)" = "$(stat peer_example_c num_dealloc_mrs)" ]
}

ktap_plan
ktap_check setup setup
ktap_check sysfs_dirs sysfs_dirs

# Both example clients, one case name each (ktap_plan counts the names).
pc=/dev/peer_example_c
pr=/dev/peer_example_rust
ktap_check rw_c counted peer_example_c 1 0 peer_user rw $pc 256K
ktap_check rw_rust counted peer_example_rust 1 0 peer_user rw $pr 256K
ktap_check invalidate_c counted peer_example_c 20 20 peer_user invalidate $pc 256K 20
ktap_check invalidate_rust counted peer_example_rust 20 20 peer_user invalidate $pr 256K 20
ktap_check invalidate_mt_c counted peer_example_c 40 40 peer_user invalidate_mt $pc 64K 10 4
ktap_check invalidate_mt_rust counted peer_example_rust 40 40 peer_user invalidate_mt $pr 64K 10 4
ktap_check race_inval_dereg_c counted peer_example_c 50 - peer_user race_dereg $pc 64K 50
ktap_check race_inval_dereg_rust counted peer_example_rust 50 - peer_user race_dereg $pr 64K 50
ktap_check decline_c peer_user decline $pc
ktap_check peer_first_c peer_user peer_first $pc
ktap_check decline_rust peer_user decline $pr
ktap_check fail_get_pages_c counted peer_example_c 0 0 peer_user fail $pc get_pages
ktap_check fail_get_pages_rust counted peer_example_rust 0 0 peer_user fail $pr get_pages
ktap_check fail_dma_map_c counted peer_example_c 0 0 peer_user fail $pc dma_map
ktap_check fail_dma_map_rust counted peer_example_rust 0 0 peer_user fail $pr dma_map
ktap_check bounds_c peer_user bounds $pc
ktap_check bounds_rust peer_user bounds $pr
ktap_check noinval_skipped_c peer_user noinval $pc swdev0
ktap_check noinval_skipped_rust peer_user noinval $pr swdev0
ktap_check pinned peer_user pinned 256K
ktap_check huge_refused peer_user huge

# An UNMAPS client (the extended registration): never asked to unmap what it
# invalidated (peer_user checks the client's count of such calls).
ktap_check unmaps_client_reloaded sh -c 'rmmod peer_example_c && modprobe peer_example_c unmaps=1'
ktap_check invalidate_unmaps counted peer_example_c 10 10 peer_user invalidate /dev/peer_example_c 64K 10
ktap_check duplicate_name_refused duplicate_name
ktap_check plain_client_reloaded modprobe peer_example_c

# Clients unloaded with live regions: the memory is invalidated first, the
# region's next access fails, its deregistration works.
ktap_check unload_c_live hold peer_example_c 64K unload_c 'status=10'
ktap_check c_client_back modprobe peer_example_c
ktap_check unload_rust_live hold peer_example_rust 64K unload_rust 'status=10'
ktap_check rust_client_back modprobe peer_example_rust
ktap_check race_dereg_unload_c race_holders peer_example_c unload_c
ktap_check c_client_again modprobe peer_example_c
# The device removed under a live peer region, then the same racing the
# deregistrations, the client's unload, and invalidations.
ktap_check device_removed_live hold peer_example_c 64K 'rxe_item_remove pma' 'errno=ENODEV'
ktap_check pma_back_1 pma_back
ktap_check race_dereg_removal race_holders peer_example_rust 'rxe_item_remove pma'
ktap_check pma_back_2 pma_back
ktap_check race_unload_removal race_holders peer_example_c removal_and_unload
ktap_check pma_back_3 back_with_c
ktap_check race_inval_removal inval_vs_removal
ktap_check clients_unload clients_unload

cleanup_run
ktap_finish
