#!/bin/sh
# Cleanup at exit for selftest programs (sourced, before netns.sh and
# rxe.sh, which register what they make here).
#
#   cleanup_add CMD [ARG...]
#                     runs CMD ARG... (a program or a shell function) when
#                     the program exits, however it exits (a failed step,
#                     `exit`, a signal); the last added runs first, with
#                     its output discarded. It must do no harm when what it
#                     undoes is already gone (the program's own teardown
#                     may have done it). The words must not contain
#                     blanks. Works from a subshell too (ktap_check runs
#                     its command in one): the list is a file.
#   cleanup_run       runs the registered commands now and forgets them
#                     (the EXIT trap calls it)
#   $tmpd             a private temporary folder, removed at exit
#
# Sourcing this also notes which modules are loaded: at exit, after the
# registered commands, every module loaded since then (by the program or
# as a dependency) is unloaded again.

tmpd=$(mktemp -d "${TMPDIR:-/tmp}/rdma-rs.XXXXXX") || exit 1
_cleanup_list=$tmpd/cleanup
_cleanup_mods=$tmpd/modules
: > "$_cleanup_list"
awk '{ print $1 }' /proc/modules > "$_cleanup_mods" 2>/dev/null

cleanup_add() {
	printf '%s\n' "$*" >> "$_cleanup_list"
}

cleanup_run() {
	[ -f "$_cleanup_list" ] || return 0
	# Newest first.
	_cl_cmds=$(sed -n '1!G;h;$p' "$_cleanup_list")
	: > "$_cleanup_list"
	while IFS= read -r _cl; do
		[ -n "$_cl" ] || continue
		set -f
		# shellcheck disable=SC2086 # split into its words on purpose
		set -- $_cl
		set +f
		"$@" < /dev/null > /dev/null 2>&1
	done <<EOF
$_cl_cmds
EOF
	return 0
}

# Unloads the modules that were not loaded when this file was sourced.
# /proc/modules lists the newest first, so users usually go before what
# they use; a few passes cover the rest.
_cleanup_modules() {
	[ -f "$_cleanup_mods" ] || return 0
	for _pass in 1 2 3 4 5; do
		_left=0
		_mods=$(awk '{ print $1 }' /proc/modules 2>/dev/null)
		for _m in $_mods; do
			grep -qx "$_m" "$_cleanup_mods" && continue
			rmmod "$_m" 2>/dev/null || _left=1
		done
		[ $_left = 0 ] && return 0
		sleep 0.2
	done
	return 0
}

# The first entry, so it runs last.
cleanup_add _cleanup_modules

# A signal ends the program through `exit`, so the EXIT trap runs (and the
# exit status is the conventional 128 + signal).
trap 'cleanup_run; rm -rf "$tmpd"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
