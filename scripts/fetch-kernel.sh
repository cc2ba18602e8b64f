#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fetches Debian's 6.12 kernel (bookworm-backports: the same kernel line as Debian 13) for
# the VM tier, without touching the host's apt configuration, /boot or /lib/modules:
# a private sources list and private apt state, `apt-get download`, `dpkg-deb -x` into a
# cache outside the source tree, then `depmod -b` there (a .deb ships no modules.dep:
# the postinst builds it). Prints the kernel directory (boot/vmlinuz-VER +
# lib/modules/VER) on stdout; vmrun.py --kernel-dir takes it. Reused between runs.
#
#   scripts/fetch-kernel.sh [--cache DIR] [--series 6.12] [--refresh]
#
# DIR defaults to $CXIOSYNC_KERNEL_CACHE or /var/cache/cxiosync-ci (if writable), else
# ~/.cache/cxiosync-ci. The kernel lands in DIR/kernel-SERIES.
set -euo pipefail

series=6.12
refresh=0
cache=
while [ $# -gt 0 ]; do
	case "$1" in
	--cache) cache=$2; shift 2 ;;
	--series) series=$2; shift 2 ;;
	--refresh) refresh=1; shift ;;
	*) echo "usage: $0 [--cache DIR] [--series 6.12] [--refresh]" >&2; exit 2 ;;
	esac
done
# shellcheck source=scripts/private-apt.inc
. "$(dirname "$0")/private-apt.inc"
[ -n "$cache" ] || cache=$(default_cache_dir)
dest=$cache/kernel-$series

have_kernel() {
	local v
	for v in "$dest"/boot/vmlinuz-*; do
		v=${v##*/vmlinuz-}
		[ -f "$dest/lib/modules/$v/modules.dep" ] && return 0
	done
	return 1
}

if [ "$refresh" = 0 ] && have_kernel; then
	echo "$dest"
	exit 0
fi

for t in apt-get dpkg-deb depmod; do
	command -v "$t" >/dev/null || { echo "fetch-kernel: $t missing" >&2; exit 1; }
done
apt_dir=$cache/apt-$series
# bookworm-backports: Debian 13's kernel line, built for bookworm.
private_apt "$apt_dir" \
	"deb [signed-by=$private_apt_keyring] $private_apt_mirror bookworm-backports main"
echo "fetch-kernel: apt-get update (private lists in $apt_dir)" >&2
apt-get "${apt_opts[@]}" -qq update >&2
# The newest linux-image-6.12.N+debK-amd64-unsigned: the plain flavour (not -rt or
# -cloud), unsigned (the signed one is the same kernel, packaged for shim).
pkg=$(apt-cache "${apt_opts[@]}" pkgnames "linux-image-$series." |
	grep -E "^linux-image-${series//./\\.}\.[0-9]+\+[a-z0-9.~]+-amd64-unsigned$" | sort -V | tail -1)
[ -n "$pkg" ] || { echo "fetch-kernel: no linux-image-$series.*-amd64-unsigned in bookworm-backports" >&2; exit 1; }
echo "fetch-kernel: downloading $pkg" >&2
work=$(mktemp -d "$cache/.fetch-XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get "${apt_opts[@]}" -qq download "$pkg" >&2)
mkdir "$work/x"
dpkg-deb -x "$work"/*.deb "$work/x"
ver=$(find "$work/x/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | head -1)
if [ -z "$ver" ] || [ ! -f "$work/x/boot/vmlinuz-$ver" ]; then
	echo "fetch-kernel: $pkg has no boot/vmlinuz-VER with lib/modules/VER" >&2
	exit 1
fi
depmod -b "$work/x" "$ver"
rm -rf "$dest.old"
[ -d "$dest" ] && mv "$dest" "$dest.old"
mkdir -p "$dest"
mv "$work/x/boot" "$work/x/lib" "$dest/"
rm -rf "$dest.old"
echo "$pkg" >"$dest/PACKAGE"
echo "fetch-kernel: $ver in $dest" >&2
echo "$dest"
