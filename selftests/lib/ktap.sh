#!/bin/sh
# KTAP output for selftest programs (sourced).
#
#   ktap_plan N            header and plan
#   ktap_pass NAME         ok
#   ktap_fail NAME [WHY]   not ok
#   ktap_skip NAME WHY     ok # SKIP
#   ktap_check NAME CMD... ok if CMD succeeds
#   ktap_module NAME.ko [ARGS]   load a test module and lift its KTAP cases
#   ktap_finish            exit 0, 4 (all skipped) or 1 (a failure)

KSFT_SKIP=4
_ktap_n=0
_ktap_fail=0
_ktap_skip=0

ktap_plan() {
	echo "KTAP version 1"
	echo "1..$1"
}

ktap_pass() {
	_ktap_n=$((_ktap_n + 1))
	echo "ok $_ktap_n $1"
}

ktap_fail() {
	_ktap_n=$((_ktap_n + 1))
	_ktap_fail=$((_ktap_fail + 1))
	echo "not ok $_ktap_n $1${2:+ # $2}"
}

ktap_skip() {
	_ktap_n=$((_ktap_n + 1))
	_ktap_skip=$((_ktap_skip + 1))
	echo "ok $_ktap_n $1 # SKIP $2"
}

ktap_check() {
	_name=$1
	shift
	if _out=$("$@" 2>&1); then
		ktap_pass "$_name"
	else
		echo "$_out" | sed 's/^/    # /'
		ktap_fail "$_name" "$*"
	fi
}

# Loads a test module (modprobe, so rdma_core comes first) whose init runs
# its cases and reports them as "ktap: ..." kernel log lines; prints those
# as subtests, then the load itself as this program's case.
ktap_module() {
	_mod=$1
	shift
	_err=$(mktemp) || { ktap_fail "$_mod" "mktemp failed"; return; }
	dmesg -c > /dev/null
	if modprobe "$_mod" "$@" 2> "$_err"; then _ok=1; else _ok=0; fi
	dmesg | sed -n 's/^.*: ktap: /    /p'
	if [ $_ok = 1 ]; then
		ktap_pass "$_mod"
	else
		sed 's/^/    # /' "$_err"
		ktap_fail "$_mod" "load failed"
	fi
	rm -f "$_err"
}

ktap_finish() {
	[ $_ktap_fail -eq 0 ] || exit 1
	[ $_ktap_n -gt 0 ] && [ $_ktap_skip -eq $_ktap_n ] && exit $KSFT_SKIP
	exit 0
}
