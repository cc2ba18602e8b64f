#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fetches one of Debian's kernels for the VM tier, without touching the host's apt
# configuration, /boot or /lib/modules: a private sources list and private apt state,
# `apt-get download`, `dpkg-deb -x` into a cache outside the source tree, then `depmod -b`
# there (a .deb ships no modules.dep: the postinst builds it). Prints the kernel directory
# (boot/vmlinuz-VER + lib/modules/VER) on stdout; vmrun.py --kernel-dir takes it. Reused
# between runs.
#
#   scripts/fetch-kernel.sh [--cache DIR] [--series 6.12|7.2|...] [--suite SUITE] [--refresh]
#
# Series and suite: 6.12 from bookworm-backports (Debian 13's kernel line, built for
# bookworm); 7.x and anything else from trixie-backports. DIR defaults to
# $CXIOSYNC_KERNEL_CACHE or /var/cache/cxiosync-ci (if writable), else ~/.cache/cxiosync-ci.
# The kernel lands in DIR/kernel-SERIES.
#
# Two package layouts (both unpacked into the same cache layout):
#   up to 6.x  linux-image-VER-amd64-unsigned: boot/vmlinuz-VER + lib/modules/VER/kernel
#   7.x        linux-image-VER-amd64 is a ~2 KB meta package; the kernel is in
#              linux-binary-VER-amd64 (usr/lib/modules/VER/vmlinuz), the modules in
#              linux-modules-VER-amd64, modules.builtin* and config in linux-base-VER-amd64,
#              all under usr/lib/modules/VER; no -unsigned package any more.
set -euo pipefail

series=6.12
suite=
refresh=0
cache=
usage="usage: $0 [--cache DIR] [--series 6.12|7.2] [--suite SUITE] [--refresh]"
while [ $# -gt 0 ]; do
	case "$1" in
	--cache) cache=$2; shift 2 ;;
	--series) series=$2; shift 2 ;;
	--suite) suite=$2; shift 2 ;;
	--refresh) refresh=1; shift ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
done
[[ "$series" =~ ^[0-9]+\.[0-9]+$ ]] || { echo "fetch-kernel: --series wants X.Y, not '$series'" >&2; exit 2; }
if [ -z "$suite" ]; then
	case "$series" in
	6.12) suite=bookworm-backports ;;
	*) suite=trixie-backports ;;
	esac
fi
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
# The host's archive keyring (private-apt.inc) verifies bookworm-backports and
# trixie-backports alike: Debian signs each suite with the current and previous archive keys.
private_apt "$apt_dir" "deb [signed-by=$private_apt_keyring] $private_apt_mirror $suite main"
echo "fetch-kernel: apt-get update (private lists in $apt_dir, $suite)" >&2
apt-get "${apt_opts[@]}" -qq update >&2
# The newest VER = SERIES.N+debK-amd64 of the plain flavour (not -rt or -cloud); for 6.x the
# unsigned image (the signed one is the same kernel, packaged for shim).
re_ver="${series//./\\.}\.[0-9]+\+[a-z0-9.~]+-amd64"
names=$(apt-cache "${apt_opts[@]}" pkgnames "linux-")
ver=$(grep -oE "^linux-(image|binary)-$re_ver(-unsigned)?$" <<<"$names" |
	sed -E 's/^linux-(image|binary)-//; s/-unsigned$//' | sort -uV | tail -1)
[ -n "$ver" ] || { echo "fetch-kernel: no linux-image-$series.*-amd64 in $suite" >&2; exit 1; }
if grep -qxF "linux-binary-$ver" <<<"$names"; then
	pkgs=("linux-binary-$ver" "linux-modules-$ver" "linux-base-$ver")
elif grep -qxF "linux-image-$ver-unsigned" <<<"$names"; then
	pkgs=("linux-image-$ver-unsigned")
else
	echo "fetch-kernel: $ver in $suite has neither linux-binary-$ver nor linux-image-$ver-unsigned" >&2
	exit 1
fi
echo "fetch-kernel: downloading ${pkgs[*]}" >&2
work=$(mktemp -d "$cache/.fetch-XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get "${apt_opts[@]}" -qq download "${pkgs[@]}" >&2)
mkdir "$work/x"
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/x"; done
x=$work/x
# 7.x: everything under usr/lib/modules/VER, the image as vmlinuz there. Into the cache's one
# layout: boot/vmlinuz-VER (vmrun.py names its uncompressed copy after the file name) and
# lib/modules/VER.
if [ -d "$x/usr/lib/modules/$ver" ] && [ ! -e "$x/lib/modules/$ver" ]; then
	mkdir -p "$x/lib/modules" "$x/boot"
	mv "$x/usr/lib/modules/$ver" "$x/lib/modules/$ver"
	if [ -f "$x/lib/modules/$ver/vmlinuz" ]; then
		mv "$x/lib/modules/$ver/vmlinuz" "$x/boot/vmlinuz-$ver"
	fi
	[ -f "$x/lib/modules/$ver/config" ] && mv "$x/lib/modules/$ver/config" "$x/boot/config-$ver"
fi
if [ ! -f "$x/boot/vmlinuz-$ver" ] || [ ! -d "$x/lib/modules/$ver/kernel" ]; then
	echo "fetch-kernel: ${pkgs[*]}: no vmlinuz with lib/modules/$ver/kernel" >&2
	exit 1
fi
depmod -b "$x" "$ver"
rm -rf "$dest.old"
[ -d "$dest" ] && mv "$dest" "$dest.old"
mkdir -p "$dest"
mv "$x/boot" "$x/lib" "$dest/"
rm -rf "$dest.old"
printf '%s\n' "${pkgs[@]}" >"$dest/PACKAGE"
echo "fetch-kernel: $ver in $dest" >&2
echo "$dest"
