#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the Debian package (cxiosync_VERSION_ARCH.deb) out of tree:
#
#   bash scripts/build-deb.sh [--head] [OUTDIR]
#   bash scripts/build-deb.sh --prebuilt BUILD_DIR [OUTDIR]
#
# Copies the source (the files git knows: tracked plus untracked-but-not-ignored; --head: the
# committed HEAD only, i.e. what a clean clone holds) to a temp dir, runs
# `dpkg-buildpackage -us -uc -b` there (tests are not run: DEB_BUILD_OPTIONS=nocheck) and
# copies the .deb/.buildinfo/.changes to OUTDIR (default: build-deb/ in the checkout, ignored
# by git). The checkout itself is never written to except OUTDIR.
#
# --prebuilt BUILD_DIR: the same dpkg-buildpackage run, but debian/rules neither configures nor
# compiles: it installs the already built CMake tree BUILD_DIR (cmake --install), which must be
# configured with CMAKE_INSTALL_PREFIX=/usr (the default preset) and have cxiosyncd,
# cxiosyncctl and cxiosync-nbd-server built. Everything else (systemd and tmpfiles handling, conffiles, stripping,
# dependencies, maintainer scripts) is the from-source package's. Seconds instead of a full
# compile: CI builds the package this way (ctest deb.prebuilt) for the VM tier. No -dbgsym
# package (noautodbgsym). The binaries carry the tree's flags (the default preset:
# RelWithDebInfo), not dpkg-buildflags' hardening. OUTDIR defaults to BUILD_DIR/deb.
#
# Needs the build dependencies of debian/control: bash scripts/install-deps.sh.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
use_head=0 prebuilt=
case "${1:-}" in
--head) use_head=1 && shift ;;
--prebuilt)
	[ -n "${2:-}" ] || { echo "build-deb: --prebuilt needs BUILD_DIR" >&2 && exit 2; }
	prebuilt=$(cd "$2" && pwd) && shift 2 ;;
esac
if [ -n "$prebuilt" ]; then
	out=${1:-$prebuilt/deb}
else
	out=${1:-$src/build-deb}
fi

tools="dpkg-buildpackage dh cmake"
[ -n "$prebuilt" ] || tools="$tools git" # --prebuilt copies debian/ only
for tool in $tools; do
	command -v "$tool" >/dev/null || {
		echo "build-deb: $tool missing; run: bash scripts/install-deps.sh" >&2
		exit 1
	}
done

# cache_var NAME: a variable of the prebuilt tree's CMakeCache.txt.
cache_var() { sed -n "s/^$1:[A-Z]*=//p" "$prebuilt/CMakeCache.txt"; }
if [ -n "$prebuilt" ]; then
	[ -f "$prebuilt/CMakeCache.txt" ] || { echo "build-deb: $prebuilt is not a CMake build tree" >&2 && exit 1; }
	# The unit's ExecStart= and every other baked-in path come from the configure step.
	prefix=$(cache_var CMAKE_INSTALL_PREFIX)
	[ "$prefix" = /usr ] || {
		echo "build-deb: $prebuilt is configured with CMAKE_INSTALL_PREFIX=$prefix, the package needs /usr" \
			"(cmake --preset default, or -DCMAKE_INSTALL_PREFIX=/usr)" >&2
		exit 1
	}
	[ "$(cache_var CXIOSYNC_SANITIZE)" != ON ] || { echo "build-deb: $prebuilt is a sanitizer build" >&2 && exit 1; }
	home=$(cache_var CMAKE_HOME_DIRECTORY)
	[ "$(cd "$home" && pwd -P)" = "$(cd "$src" && pwd -P)" ] || {
		echo "build-deb: $prebuilt was configured from $home, not from $src" >&2
		exit 1
	}
	# The man pages are rendered with the programs (packaging/CMakeLists.txt); a tree configured
	# without them would ship a package without manuals (lintian no-manual-page).
	[ "$(cache_var CXIOSYNC_MAN)" = ON ] || {
		echo "build-deb: $prebuilt is configured without man pages (CXIOSYNC_MAN=OFF: install scdoc," \
			"bash scripts/install-deps.sh, and reconfigure)" >&2
		exit 1
	}
	for f in daemon/cxiosyncd dbus/cxiosyncctl daemon/cxiosync-nbd-server packaging/man/cxiosyncd.8 packaging/man/cxiosyncctl.1; do
		[ -e "$prebuilt/$f" ] || {
			echo "build-deb: $prebuilt/$f is not built (cmake --build $prebuilt --target cxiosyncd cxiosyncctl cxiosync-nbd-server)" >&2
			exit 1
		}
	done
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cxiosync-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/cxiosync"
if [ -n "$prebuilt" ]; then
	# debian/ is all dpkg-buildpackage reads; the install rules read the checkout through the
	# build tree.
	cp -a "$src/debian" "$tmp/cxiosync/"
elif [ $use_head -eq 1 ]; then
	git -C "$src" archive --format=tar HEAD | tar -x -C "$tmp/cxiosync"
else
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -x -C "$tmp/cxiosync"
fi

echo "build-deb: building in $tmp/cxiosync${prebuilt:+ from the prebuilt tree $prebuilt}"
(
	cd "$tmp/cxiosync"
	export DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-} parallel=$(nproc)"
	if [ -n "$prebuilt" ]; then
		export CXIOSYNC_PREBUILT=$prebuilt
		DEB_BUILD_OPTIONS="$DEB_BUILD_OPTIONS noautodbgsym"
	fi
	dpkg-buildpackage -us -uc -b
)
mkdir -p "$out"
shopt -s nullglob
files=("$tmp"/*.deb "$tmp"/*.ddeb "$tmp"/*.buildinfo "$tmp"/*.changes)
cp "${files[@]}" "$out/"
for f in "${files[@]}"; do echo "build-deb: $out/$(basename "$f")"; done
