#!/bin/sh
# Sysfs classes of other modules (rdma::kshim::class): rdma_class_test's
# cases, then its tree and the class's own files read and written from user
# space, a store that
# removes its own directory through a work item, and unload while files
# are being read.
. ../lib/ktap.sh
. ../lib/cleanup.sh

cls=/sys/class/rdma_rs_class_test
sess=$cls/sess0
path2="$sess/paths/ip:10.0.0.1@ip:10.0.0.2"
path3="$sess/paths/ip:10.0.0.1@ip:10.0.0.3"

# The file's permission bits, as ls shows them.
mode_of() {
	# shellcheck disable=SC2012 # one file of a known name
	ls -lL "$1" | cut -c1-10
}

# Writes $2 to file $1; fails as the write does.
write_to() {
	echo "$2" > "$1"
}

stores_and_shows() {
	write_to "$sess/limit" 42 && [ "$(cat "$sess/limit")" = 42 ] &&
		write_to "$path2/stats/rdma" 7 && [ "$(cat "$path2/stats/rdma")" = 7 ] &&
		[ "$(cat "$path3/stats/rdma")" = 0 ]
}

class_files() {
	[ "$(cat "$cls/abi_version")" = 6 ] && [ "$(mode_of "$cls/abi_version")" = -r--r--r-- ] &&
		! write_to "$cls/abi_version" 7 2> /dev/null &&
		[ "$(cat "$cls/class_limit")" = 10 ] && write_to "$cls/class_limit" 5 &&
		[ "$(cat "$cls/class_limit")" = 5 ] && ! write_to "$cls/class_limit" x 2> /dev/null
}

store_error_reaches_writer() {
	! write_to "$sess/limit" bogus 2> /dev/null && [ "$(cat "$sess/limit")" = 42 ]
}

# A read-only file refuses writes, root's included.
readonly_file() {
	[ "$(mode_of "$sess/reads")" = -r--r--r-- ] && [ "$(mode_of "$sess/limit")" = -rw-r--r-- ] &&
		! write_to "$sess/reads" 1 2> /dev/null
}

show_runs_per_read() {
	a=$(cat "$sess/reads") && b=$(cat "$sess/reads") && [ "$b" -eq $((a + 1)) ]
}

# Waits up to about 5 s for $1 to be gone.
gone() {
	for _ in $(seq 50); do
		[ -e "$1" ] || return 0
		sleep 0.1
	done
	return 1
}

remove_path_from_work() {
	write_to "$path2/remove_path" 1 && gone "$path2" && [ -d "$path3/stats" ] &&
		[ "$(ls "$sess/paths")" = "ip:10.0.0.1@ip:10.0.0.3" ]
}

# Readers on every file while the module goes: removal waits for show calls
# in progress and later reads fail; no splat (the harness checks the log).
unload_while_reading() {
	pids=
	for f in "$sess/reads" "$sess/limit" "$path3/stats/rdma" "$path3/remove_path" \
		"$cls/abi_version" "$cls/class_limit"; do
		(while :; do cat "$f" > /dev/null 2>&1 || exit 0; done) &
		pids="$pids $!"
	done
	sleep 1
	rmmod rdma_class_test || return 1
	# shellcheck disable=SC2086 # one word per pid
	kill $pids 2> /dev/null
	wait
	[ ! -e "$cls" ]
}

ktap_plan
ktap_module rdma_class_test
cleanup_add rmmod rdma_class_test
ktap_check "class_listed" test -d "$cls"
ktap_check "top_dir_is_a_class_device" test -L "$sess" -a -d "$sess"
ktap_check "child_dirs" test -d "$path2/stats" -a -d "$path3/stats"
ktap_check "shows_initial_values" test "$(cat "$sess/limit")" = 10
ktap_check "stores_and_shows" stores_and_shows
ktap_check "class_files" class_files
ktap_check "store_error_reaches_writer" store_error_reaches_writer
ktap_check "readonly_file" readonly_file
ktap_check "show_runs_per_read" show_runs_per_read
ktap_check "remove_path_from_work" remove_path_from_work
ktap_check "unload_while_reading" unload_while_reading
ktap_finish
