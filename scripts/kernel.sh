#!/usr/bin/env bash
# Build the test kernel once and cache it outside the repository.
#
# The tree lives at $KDIR (scripts/env.sh), keyed by the linux-source-6.12
# version, the config fragment, KERNEL_RECIPE and the toolchain versions; a
# finished build is marked by $KDIR/.rdma-rs-done and never rebuilt. The
# kernel's own modules are installed under $KDIR/modinst for the initramfs.
set -euo pipefail
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"

if [ -f "$KDIR/.rdma-rs-done" ]; then
	echo "kernel: cached at $KDIR"
	exit 0
fi

# One build at a time (two checkouts on one machine share the cache): the
# second waits for the first, then finds its tree done.
mkdir -p "$(dirname "$KDIR")"
exec 9> "$KDIR.lock"
flock 9
if [ -f "$KDIR/.rdma-rs-done" ]; then
	echo "kernel: cached at $KDIR (built meanwhile)"
	exit 0
fi

tarball=$(kernel_tarball)
[ -n "$tarball" ] || { echo "kernel: linux-source-6.12 is not installed (run scripts/deps.sh)" >&2; exit 1; }

jobs=$(( $(nproc) + 1 ))
tmp=$KDIR.partial
rm -rf "$tmp"
mkdir -p "$tmp"
echo "kernel: extracting $tarball into $tmp"
tar -xf "$tarball" -C "$tmp" --strip-components=1

frag=$tmp/rdma-rs-$KERNEL_FLAVOR.config
kernel_fragment > "$frag"
cd "$tmp"
make -s "${KMAKE_VARS[@]}" rustavailable
make -s "${KMAKE_VARS[@]}" tinyconfig
scripts/kconfig/merge_config.sh -m .config "$frag" >/dev/null
make -s "${KMAKE_VARS[@]}" olddefconfig

# Every line of the fragment must have survived olddefconfig: a dependency we
# missed would otherwise silently turn an option off.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*) grep -qx -- "$line" .config || { echo "kernel: $line did not stick" >&2; bad=1; } ;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }; opt=${opt%% *}
		grep -q "^$opt=" .config && { echo "kernel: $opt should be off" >&2; bad=1; } ;;
	esac
done < "$frag"
[ $bad -eq 0 ] || exit 1

echo "kernel: building bzImage and modules with -j$jobs (about 15 minutes on 2 cores)"
start=$(date +%s)
make -s -j"$jobs" "${KMAKE_VARS[@]}" bzImage modules
make -s "${KMAKE_VARS[@]}" INSTALL_MOD_PATH="$tmp/modinst" modules_install
echo "kernel: built in $(( $(date +%s) - start )) s"

cd /
rm -rf "$KDIR"
mv "$tmp" "$KDIR"
touch "$KDIR/.rdma-rs-done"
echo "kernel: cached at $KDIR"
