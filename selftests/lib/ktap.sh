#!/bin/sh
# KTAP output for selftest programs (sourced).
#
#   ktap_plan              header and plan: the number of distinct case
#                          names the program's ktap_check, ktap_module,
#                          ktap_pass, ktap_fail and ktap_skip calls name, so
#                          a case added is a case planned; ktap_finish fails
#                          a program that ran another number
#   ktap_pass NAME         ok
#   ktap_fail NAME [WHY]   not ok
#   ktap_skip NAME WHY     ok # SKIP
#   ktap_check NAME CMD... ok if CMD succeeds (a case of 5 s or more
#                          says its time in a "# NAME: N s" line)
#   ktap_module NAME.ko [ARGS]   load a test module and lift its KTAP cases
#   ktap_finish            exit 0, 4 (all skipped) or 1 (a failure)

KSFT_SKIP=4
_ktap_n=0
_ktap_fail=0
_ktap_skip=0

ktap_plan() {
	_ktap_plan=$(grep -oE 'ktap_(check|module|pass|fail|skip) [^ ;]+' "$0" |
		awk '{ gsub(/"/, "", $2); print $2 }' | sort -u | wc -l)
	echo "KTAP version 1"
	echo "1..$_ktap_plan"
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

# Seconds since boot (whole).
_ktap_now() {
	read -r _up _ < /proc/uptime
	echo "${_up%.*}"
}

ktap_check() {
	_name=$1
	shift
	_t0=$(_ktap_now)
	if _out=$("$@" 2>&1); then
		ktap_pass "$_name"
	else
		echo "$_out" | sed 's/^/    # /'
		ktap_fail "$_name" "$*"
	fi
	# What a case costs, to keep the suites cheap (testing.rst).
	_dt=$(($(_ktap_now) - _t0))
	[ "$_dt" -lt 5 ] || echo "# $_name: ${_dt} s"
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
	# Its KTAP, and what it logged as an error or warning (why a case
	# failed) as diagnostics in their place.
	dmesg -r | sed -n "s/^<[0-9]*>\[[^]]*\] $_mod: ktap: /    /p; s/^<[34]>\[[^]]*\] $_mod: /    # /p"
	if [ $_ok = 1 ]; then
		ktap_pass "$_mod"
	else
		sed 's/^/    # /' "$_err"
		ktap_fail "$_mod" "load failed"
	fi
	rm -f "$_err"
}

ktap_finish() {
	if [ "$_ktap_n" -ne "${_ktap_plan:-$_ktap_n}" ]; then
		echo "# ran $_ktap_n cases, planned $_ktap_plan"
		exit 1
	fi
	[ $_ktap_fail -eq 0 ] || exit 1
	[ $_ktap_n -gt 0 ] && [ $_ktap_skip -eq $_ktap_n ] && exit $KSFT_SKIP
	exit 0
}
