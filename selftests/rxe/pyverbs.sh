#!/bin/sh
# rdma-core's own test suite (run_tests.py from Debian's python3-pyverbs
# 44, unchanged) on the kernel's rdma_rxe with ib_uverbs, then on our rxe
# with rdma_rs_uverbs, in the same guest on the same veth and GID: every
# test the kernel's stack passes, ours passes. Both lists are printed.
# Tests the kernel's stack fails or skips are not compared.
#
# The rdma_cm tests (tests.test_rdmacm) skip on a device without
# /sys/class/infiniband/<dev>/device/net/<netdev> (rdma-core's base.py
# reads the device's IP address there): the kernel's rdma_rxe never has
# that link (it gives its devices no parent), and neither does ours on a
# veth (a veth has no parent device). So they run once more on both stacks
# on lone0, the lone guest's virtio-net NIC (scripts/vm.sh), whose parent
# is the virtio device: ours links its device's tree there (`device`), as
# the C stack's tree of a hardware device links to its PCI function. Every
# one of them passes on ours, but for the known list below; on the
# kernel's stack they still skip (printed, not compared).
. ../lib/ktap.sh
. ../lib/cleanup.sh
. ../lib/rxe.sh

ktap_plan

tests=/usr/share/rdma-core-tests/tests
if ! command -v python3 > /dev/null || [ ! -f "$tests/run_tests.py" ]; then
	ktap_skip "c_stack_run" "no python3-pyverbs in this guest"
	ktap_skip "ours_run" "no python3-pyverbs in this guest"
	ktap_skip "ours_passes_what_c_passes" "no python3-pyverbs in this guest"
	ktap_skip "nothing_left" "no python3-pyverbs in this guest"
	ktap_skip "c_rdmacm_run" "no python3-pyverbs in this guest"
	ktap_skip "ours_rdmacm_run" "no python3-pyverbs in this guest"
	ktap_skip "ours_rdmacm_passes" "no python3-pyverbs in this guest"
	ktap_finish
fi

# One veth pair in the initial namespace (where both stacks answer the
# RDMA netlink family), an IPv4 address on the side the devices bind to.
ip link add pva type veth peer name pvb || exit 1
cleanup_add ip link del pva
ip addr add 10.81.0.1/24 dev pva && ip link set pva up && ip link set pvb up || exit 1

# lone0 for the rdma_cm tests, if this guest has it; it is left down and
# without an address, as it was.
cm_if=lone0
if ip link show "$cm_if" > /dev/null 2>&1; then
	cleanup_add ip link set "$cm_if" down
	cleanup_add ip addr flush dev "$cm_if"
	ip addr add 10.82.0.1/24 dev "$cm_if" && ip link set "$cm_if" up || exit 1
else
	cm_if=
fi

# run_tests.py on DEV, its RoCE v2 GID of IPv4 address TAIL (hex, as
# roce_v2_gid_index takes it), every test or those of the unittest names
# given (a module: tests.test_rdmacm); the unittest stream (stderr) goes to
# $tmpd/NAME.log, what the tests print to $tmpd/NAME.out, and "ID
# pass|skip|fail" lines for each test to $tmpd/NAME.res. Fails if the run
# did not finish or had MIN tests or fewer.
run_suite() { # name dev tail min [test...]
	_name=$1 _dev=$2 _min=$4
	_gid=$(roce_v2_gid_index "$_dev" "$3") || { echo "$_dev: no RoCE v2 GID"; return 1; }
	shift 4
	timeout 900 python3 "$tests/run_tests.py" --dev "$_dev" --gid "$_gid" -v "$@" \
		> "$tmpd/$_name.out" 2> "$tmpd/$_name.log"
	_rc=$?
	# unittest exits 1 when a test fails; anything else (a crash, the
	# timeout) means the run did not finish.
	[ "$_rc" -le 1 ] || { echo "run_tests.py exited $_rc"; tail -n 30 "$tmpd/$_name.log"; return 1; }
	suite_results "$tmpd/$_name.log" > "$tmpd/$_name.res"
	_ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$tmpd/$_name.log")
	_got=$(wc -l < "$tmpd/$_name.res")
	# Every test run has its outcome read, or the comparison means nothing.
	if [ -z "$_ran" ] || [ "$_ran" -ne "$_got" ] || [ "$_ran" -le "$_min" ]; then
		echo "ran ${_ran:-?} tests, read $_got outcomes"
		tail -n 30 "$tmpd/$_name.log"
		return 1
	fi
	awk '{ n[$2]++ } END { printf "%d passed, %d skipped, %d failed\n", n["pass"], n["skip"], n["fail"] }' \
		"$tmpd/$_name.res" > "$tmpd/$_name.sum"
}

# unittest's verbose stream: "test_x (tests.mod.Class.test_x)", then, on
# the same line or after the test's docstring, " ... STATUS" (or " ... "
# at the end of a line when the test wrote to stderr, STATUS on a later
# line). Prints "ID pass|skip|fail", one line a test.
suite_results() { # log
	awk '
	function out(st) {
		if (cur == "") return
		if (st ~ /^ok/ || st ~ /^expected failure/) print cur, "pass"
		else if (st ~ /^skipped/) print cur, "skip"
		else print cur, "fail"
		cur = ""
	}
	match($0, /^test[^ ]* \(tests\.[^ )]*\)/) {
		cur = substr($0, 1, RLENGTH)
		sub(/^[^(]*\(/, "", cur)
		sub(/\)$/, "", cur)
	}
	cur != "" && / \.\.\. / {
		st = substr($0, index($0, " ... ") + 5)
		if (st != "") out(st)
		else pending = 1
		next
	}
	cur != "" && pending && /^(ok|FAIL|ERROR|skipped|expected failure|unexpected success)/ {
		pending = 0
		out($0)
	}' "$1" | sort -u
}

# The summary, each test that did not pass, and for each failure the last
# line of its traceback (unittest's "ERROR: ID" / "FAIL: ID" blocks).
show_results() { # name
	sed 's/^/    # /' "$tmpd/$1.sum"
	awk '$2 != "pass" { print "    # " $2 ": " $1 }' "$tmpd/$1.res"
	awk '
	/^(ERROR|FAIL): / { id = $2; last = ""; next }
	id != "" && /^(====|----)/ && last != "" { print "    # " id ": " last; id = "" }
	id != "" && NF { last = $0 }' "$tmpd/$1.log"
}

# The kernel's stack first; then it goes, and is kept from autoloading
# (libibverbs opens the RDMA netlink family, which would load ib_core).
c_stack_run() {
	modprobe rdma_rxe && modprobe ib_uverbs || return 1
	c_rxe_add pvc pva || return 1
	run_suite c pvc 0a51:0001 100
	_rc=$?
	rdma link delete pvc
	modprobe -r rdma_rxe && modprobe -r ib_uverbs ib_core || return 1
	[ "$_rc" = 0 ] || return 1
	show_results c
}
ktap_check "c_stack_run" c_stack_run

# The rdma_cm tests on the kernel's stack on lone0, with its rdma_ucm: they
# skip (its rxe device has no `device` link). Shown, not compared.
c_rdmacm_run() {
	modprobe rdma_rxe && modprobe ib_uverbs && modprobe rdma_ucm || return 1
	c_rxe_add pvcl "$cm_if" || return 1
	run_suite c_cm pvcl 0a52:0001 9 tests.test_rdmacm
	_rc=$?
	rdma link delete pvcl
	if ! modprobe -r rdma_ucm rdma_cm iw_cm ib_cm || ! modprobe -r rdma_rxe ||
		! modprobe -r ib_uverbs ib_core; then
		lsmod
		return 1
	fi
	[ "$_rc" = 0 ] || return 1
	show_results c_cm
}
if [ -n "$cm_if" ]; then
	ktap_check "c_rdmacm_run" c_rdmacm_run
else
	ktap_skip "c_rdmacm_run" "no lone0 (not a lone vm.sh guest)"
fi

nocore=/etc/modprobe.d/rdma-rs-no-ib-core.conf
mkdir -p /etc/modprobe.d
printf 'install ib_core /bin/false\ninstall ib_uverbs /bin/false\n' > "$nocore"
cleanup_add rm -f "$nocore"
res=/sys/class/rdma_rs/pvr/resources
ours_run() {
	modprobe rdma_rs_rxe && modprobe rdma_rs_uverbs || return 1
	rxe_item_new pvr && echo pva > "$rxe_cfs/pvr/netdev" && echo 1 > "$rxe_cfs/pvr/enable" || return 1
	cat "$res" > "$tmpd/res0" || return 1
	run_suite ours pvr 0a51:0001 100 || return 1
	show_results ours
}
ktap_check "ours_run" ours_run

# Every test that passes on the kernel's stack passes on ours.
# Known differences, each a bug of ours that Documentation/uverbs.rst
# explains ("rdma-core's tests on both stacks"), would be listed here
# (space-separated test names): printed, whether they failed or passed
# this time, not failed. There are none.
known=""
ours_passes_what_c_passes() {
	if [ ! -s "$tmpd/c.res" ] || [ ! -s "$tmpd/ours.res" ]; then
		echo "a run is missing"
		return 1
	fi
	awk -v known="$known" '
	BEGIN { nk = split(known, k, " "); for (i = 1; i <= nk; i++) isknown[k[i]] = 1 }
	FNR == NR { if ($2 == "pass") { c[$1] = 1; n++ } next }
	$2 == "pass" && ($1 in isknown) { print "known difference, passed this time: " $1 }
	$2 == "pass" && ($1 in c) { both++; delete c[$1] }
	END {
		for (t in c) {
			if (t in isknown) { print "known difference: " t; continue }
			print "passes on the kernel'"'"'s stack only: " t; bad = 1
		}
		print both " of the kernel'"'"'s " n " passing tests pass on ours"
		exit bad || n < 50
	}' "$tmpd/c.res" "$tmpd/ours.res"
}
ktap_check "ours_passes_what_c_passes" ours_passes_what_c_passes

# The rdma_cm tests on ours on lone0, with rdma_rs_ucm, our device's tree
# linked to the virtio device.
resl=/sys/class/rdma_rs/pvl/resources
ours_rdmacm_run() {
	modprobe rdma_rs_ucm || return 1
	rxe_item_new pvl && echo "$cm_if" > "$rxe_cfs/pvl/netdev" && echo 1 > "$rxe_cfs/pvl/enable" || return 1
	# The link the tests look for.
	ls "/sys/class/infiniband/pvl/device/net/$cm_if" > /dev/null || return 1
	cat "$resl" > "$tmpd/resl0" || return 1
	run_suite ours_cm pvl 0a52:0001 9 tests.test_rdmacm || return 1
	show_results ours_cm
}

# Every rdma_cm test passes on ours (UD connections by SIDR and multicast
# included) but for known differences, listed here and printed (failed,
# skipped or passed), not failed. There are none.
cm_known=""
ours_rdmacm_passes() {
	[ -s "$tmpd/ours_cm.res" ] || { echo "no run"; return 1; }
	awk -v known="$cm_known" '
	BEGIN { nk = split(known, k, "[ \n]+"); for (i = 1; i <= nk; i++) isknown[k[i]] = 1 }
	$1 in isknown { print "known (not built yet), " $2 " this time: " $1; next }
	$2 == "pass" { n++; next }
	{ print $2 ": " $1; bad = 1 }
	END {
		print n + 0 " rdma_cm tests pass on ours"
		exit bad || n == 0
	}' "$tmpd/ours_cm.res"
}
if [ -n "$cm_if" ]; then
	ktap_check "ours_rdmacm_run" ours_rdmacm_run
	ktap_check "ours_rdmacm_passes" ours_rdmacm_passes
else
	ktap_skip "ours_rdmacm_run" "no lone0 (not a lone vm.sh guest)"
	ktap_skip "ours_rdmacm_passes" "no lone0 (not a lone vm.sh guest)"
fi

# Every list, whatever the checks said.
for _s in c ours c_cm ours_cm; do
	[ -s "$tmpd/$_s.res" ] || continue
	echo "# run_tests.py ($_s): $(cat "$tmpd/$_s.sum")"
	sed "s/^/# $_s: /" "$tmpd/$_s.res"
done
for _t in $cm_known; do
	[ -s "$tmpd/ours_cm.res" ] || break
	echo "# rdma_cm test known not to pass on ours yet: $_t: $(awk -v t="$_t" '$1 == t { print $2 }' "$tmpd/ours_cm.res")"
done

# Every object the tests made on our device is gone.
nothing_left() {
	cmp -s "$tmpd/res0" "$res" || { diff "$tmpd/res0" "$res"; return 1; }
	[ ! -s "$tmpd/resl0" ] || cmp -s "$tmpd/resl0" "$resl" || { diff "$tmpd/resl0" "$resl"; return 1; }
}
ktap_check "nothing_left" nothing_left

ktap_finish
