# shellcheck shell=sh
# Helpers of the suites that run the kernel's rnbd_client (rtrs/rnbd.sh,
# rtrs/kmpath.sh, rtrs/rnbd_server.sh).

# Unmaps /dev/DEV of the kernel's rnbd_client and waits until its session
# SESSION is freed. The client frees a session from the work that confirms
# the close message, after the unmap has returned, and its module exit
# does not wait for that work: unloading first leaves the session behind
# (a WARNING in rnbd_destroy_sessions, then a fault in the unloaded
# module's code). The session's rtrs-client device goes last in that
# work's close; one second more covers the rest of the work.
rnbd_unmap() { # DEV SESSION
	echo normal > "/sys/block/$1/rnbd/unmap_device" && [ ! -b "/dev/$1" ] || return 1
	for _ in $(seq 100); do
		[ -e "/sys/class/rtrs-client/$2" ] || { sleep 1; return 0; }
		sleep 0.1
	done
	echo "the client's session $2 is still there"
	return 1
}

# The block device of the kernel client's session NAME.
rnbd_of() {
	for f in /sys/block/rnbd*/rnbd/session; do
		[ -f "$f" ] || continue
		[ "$(cat "$f")" = "$1" ] || continue
		f=${f%/rnbd/session}
		echo "${f##*/}"
		return 0
	done
	return 1
}

# Waits up to 10 s for PATH to be gone.
gone() {
	for _ in $(seq 100); do
		[ -e "$1" ] || return 0
		sleep 0.1
	done
	echo "$1 is still there"
	return 1
}
