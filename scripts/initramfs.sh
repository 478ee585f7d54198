#!/usr/bin/env bash
# Build the guest's initramfs: busybox, the kernel's modules and ours (those
# of the current build, from its modules.order), the selftests, and the
# userspace RDMA tools (with their libraries and the libibverbs providers)
# that drive the kernel's C stack.
#
# usage: scripts/initramfs.sh OUT.cpio
set -euo pipefail
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"

out=$(realpath -m "$1")
mkdir -p "$(dirname "$out")"
kver=$(cat "$KDIR/include/config/kernel.release")
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

# Debian's merged-/usr layout: /bin, /sbin, /lib and /lib64 point into /usr,
# so the kernel's usermode helpers (/sbin/modprobe) find kmod.
mkdir -p "$root"/{dev,proc,sys,run,tmp,etc,root,usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64}
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done

# Copies a dynamically linked binary or library and everything it needs.
copy_with_libs() {
	local f lib
	for f in "$@"; do
		[ -e "$root$f" ] || { mkdir -p "$root$(dirname "$f")"; cp -L "$f" "$root$f"; }
		ldd "$f" 2>/dev/null | awk '/=> \// { print $3 } /^[ \t]*\/lib/ { print $1 }' |
		while read -r lib; do
			local base dest
			base=$(basename "$lib")
			case "$lib" in
			*/ld-linux*) dest=/usr/lib64/$base ;;
			*) dest=/usr/lib/x86_64-linux-gnu/$base ;;
			esac
			[ -e "$root$dest" ] || cp -L "$lib" "$root$dest"
		done || true # (ldd fails on scripts)
	done
}

# Userspace RDMA tools and iproute2 (ip with netns support, rdma), and kmod.
tools=()
for pkg in ibverbs-utils rdmacm-utils perftest; do
	while read -r f; do
		case "$f" in /usr/bin/*) [ -f "$f" ] && tools+=("$f") ;; esac
	done < <(dpkg -L "$pkg")
done
tools+=(/usr/bin/ip /usr/bin/rdma /usr/bin/kmod /usr/bin/dash)
# perf, for make bench's profile (linux-perf; the guest's kernel is newer,
# which perf record and report do not mind).
tools+=(/usr/bin/perf)
# e2fsprogs: a file system on RNBD devices, checked after the IO.
tools+=(/usr/sbin/mke2fs /usr/sbin/e2fsck)
copy_with_libs "${tools[@]}"
ln -s mke2fs "$root/usr/sbin/mkfs.ext4"
cp /etc/mke2fs.conf "$root/etc/mke2fs.conf"
# The shell is dash, not busybox's ash: Debian's static busybox runs its own
# applets in preference to PATH, which would shadow iproute2's ip and kmod.
ln -s dash "$root/usr/bin/sh"
for t in modprobe insmod rmmod lsmod modinfo depmod; do
	ln -s ../bin/kmod "$root/usr/sbin/$t"
done

# busybox for everything else: a link per applet that no real tool provides.
cp /bin/busybox "$root/usr/bin/busybox"
for applet in $(/bin/busybox --list); do
	[ -e "$root/usr/bin/$applet" ] || [ -e "$root/usr/sbin/$applet" ] ||
		ln -s busybox "$root/usr/bin/$applet"
done

# libibverbs providers, loaded with dlopen (ldd cannot see them).
prov=/usr/lib/x86_64-linux-gnu/libibverbs
mkdir -p "$root$prov" "$root/etc/libibverbs.d"
for so in "$prov"/*.so; do copy_with_libs "$so"; done
cp /etc/libibverbs.d/*.driver "$root/etc/libibverbs.d/"
copy_with_libs /usr/lib/x86_64-linux-gnu/librdmacm.so.1

# rdma-core's own test suite (selftests/rxe/pyverbs.sh): Python, its
# standard library less the parts the suite never imports, python3-pyverbs
# and the libraries of its extension modules, and the suite itself, which
# Debian ships in /usr/share/doc with most files gzipped: unpacked, not
# changed, into /usr/share/rdma-core-tests/tests (run_tests.py imports it
# as the package "tests").
py=python3.11
copy_with_libs "/usr/bin/$py"
ln -s "$py" "$root/usr/bin/python3"
(cd /usr/lib && find "$py" \( -name test -o -name tests -o -name idlelib -o -name tkinter \
	-o -name turtledemo -o -name ensurepip -o -name lib2to3 -o -name pydoc_data \
	-o -name 'config-*' \) -prune -o -print | cpio -pdm --quiet "$root/usr/lib")
(cd /usr/lib && find python3/dist-packages/pyverbs | cpio -pdm --quiet "$root/usr/lib")
for so in "/usr/lib/$py"/lib-dynload/*.so /usr/lib/python3/dist-packages/pyverbs/*.so \
	/usr/lib/python3/dist-packages/pyverbs/providers/*/*.so; do
	copy_with_libs "$so"
done
pyt=$root/usr/share/rdma-core-tests/tests
mkdir -p "$pyt"
cp /usr/share/doc/rdma-core/tests/* "$pyt/"
gunzip -f "$pyt"/*.gz

# Kernel modules: the kernel's own, then ours under extra/.
mkdir -p "$root/usr/lib/modules"
cp -a "$KDIR/modinst/lib/modules/$kver" "$root/usr/lib/modules/"
rm -f "$root/usr/lib/modules/$kver/build" "$root/usr/lib/modules/$kver/source"
# Ours are exactly the modules of the current build: those listed in the
# modules.order that Kbuild writes at the top of the external-module build
# (one NAME.o per module, absolute or relative to the top). A .ko that no
# longer belongs to the build (an older layout of the tree) is not shipped.
extra=$root/usr/lib/modules/$kver/extra
mkdir -p "$extra"
order=$RDMA_RS_TOP/modules.order
[ -s "$order" ] || { echo "initramfs: no $order: build the modules first (make modules)" >&2; exit 1; }
while IFS= read -r o; do
	case "$o" in
	/*) ko=${o%.o}.ko ;;
	*) ko=$RDMA_RS_TOP/${o%.o}.ko ;;
	esac
	[ -f "$ko" ] || { echo "initramfs: $ko, listed in $order, is missing" >&2; exit 1; }
	[ ! -e "$extra/${ko##*/}" ] || { echo "initramfs: two modules named ${ko##*/}" >&2; exit 1; }
	cp "$ko" "$extra/"
done < "$order"
depmod -b "$root" "$kver"

# The packet capture tool of the interop tests, static (no compiler in the
# guest).
gcc -static -O2 -Wall -Werror -o "$root/usr/bin/pktcap" "$RDMA_RS_TOP/selftests/tools/pktcap.c"
# The user-space side of the peer memory tests (selftests/peer_mem).
gcc -static -O2 -Wall -Werror -pthread -o "$root/usr/bin/peer_user" \
	"$RDMA_RS_TOP/selftests/peer_mem/peer_user.c"
# The user-space side of the character device test (selftests/foundation).
gcc -static -O2 -Wall -Werror -pthread -o "$root/usr/bin/chardev_user" \
	"$RDMA_RS_TOP/selftests/foundation/chardev_user.c"
# The hand-written uverbs commands of selftests/rxe/uverbs.sh.
gcc -static -O2 -Wall -Werror -pthread -o "$root/usr/bin/uverbs_user" \
	"$RDMA_RS_TOP/selftests/rxe/uverbs_user.c"
# The hand-written rdma_cm commands of selftests/rxe/ucma.sh.
gcc -static -O2 -Wall -Werror -o "$root/usr/bin/ucma_user" \
	"$RDMA_RS_TOP/selftests/rxe/ucma_user.c"
# The user-space side of the netlink endpoint test (selftests/foundation).
gcc -static -O2 -Wall -Werror -o "$root/usr/bin/netlink_user" \
	"$RDMA_RS_TOP/selftests/foundation/netlink_user.c"
# The block-device load of `make bench` (selftests/bench.sh).
gcc -static -O2 -Wall -Werror -o "$root/usr/bin/blkload" "$RDMA_RS_TOP/selftests/tools/blkload.c"
# What the CRC-32 of a packet costs in the guest, by method (make bench).
gcc -static -O2 -Wall -Werror -o "$root/usr/bin/crcspeed" "$RDMA_RS_TOP/selftests/tools/crcspeed.c"
# One O_DIRECT request scattered over pieces of pages (rnbd_client.sh's
# bounce path).
gcc -static -O2 -Wall -Werror -o "$root/usr/bin/scatterio" "$RDMA_RS_TOP/selftests/tools/scatterio.c"
# Its comparison tool (tools/pktcmp, on our codec) and the hostile packet
# sender of selftests/rxe/hostile.sh (tools/pktinject), static as well.
(cd "$RDMA_RS_TOP" && RUSTFLAGS="-C target-feature=+crt-static" \
	cargo build -q --release -p pktcmp -p pktinject --target x86_64-unknown-linux-gnu)
for tool in pktcmp pktinject; do
	cp "$RDMA_RS_TOP/target/x86_64-unknown-linux-gnu/release/$tool" "$root/usr/bin/"
done

# Selftests (scripts and the runner; the modules are in extra/ above).
mkdir -p "$root/selftests"
(cd "$RDMA_RS_TOP/selftests" &&
	find . \( -name '*.sh' -o -name Makefile -o -name settings \) -not -path './*/modules/*' |
	cpio -pdm --quiet "$root/selftests")

cp "$RDMA_RS_TOP/scripts/guest/init" "$root/init"
chmod +x "$root/init"
echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
echo "root:x:0:" > "$root/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' > "$root/etc/hosts"

(cd "$root" && find . | cpio -o -H newc --quiet) > "$out.tmp"
mv "$out.tmp" "$out"
