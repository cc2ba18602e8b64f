#!/usr/bin/env bash
# Builds the Debian package (cxiosync_VERSION_ARCH.deb) out of tree:
#
#   bash scripts/build-deb.sh [--head] [OUTDIR]
#
# Copies the source (the files git knows: tracked plus untracked-but-not-ignored; --head: the
# committed HEAD only, i.e. what a clean clone holds) to a temp dir, runs
# `dpkg-buildpackage -us -uc -b` there (tests are not run: DEB_BUILD_OPTIONS=nocheck) and
# copies the .deb/.buildinfo/.changes to OUTDIR (default: build-deb/ in the checkout, ignored
# by git). The checkout itself is never written to except OUTDIR.
# Needs the build dependencies of debian/control: bash scripts/install-deps.sh.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
use_head=0
if [ "${1:-}" = "--head" ]; then use_head=1; shift; fi
out=${1:-$src/build-deb}

for tool in dpkg-buildpackage dh git; do
	command -v "$tool" >/dev/null || {
		echo "build-deb: $tool missing; run: bash scripts/install-deps.sh" >&2
		exit 1
	}
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cxiosync-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/cxiosync"
if [ $use_head -eq 1 ]; then
	git -C "$src" archive --format=tar HEAD | tar -x -C "$tmp/cxiosync"
else
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -x -C "$tmp/cxiosync"
fi

echo "build-deb: building in $tmp/cxiosync"
(
	cd "$tmp/cxiosync"
	export DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-} parallel=$(nproc)"
	dpkg-buildpackage -us -uc -b
)
mkdir -p "$out"
shopt -s nullglob
files=("$tmp"/*.deb "$tmp"/*.ddeb "$tmp"/*.buildinfo "$tmp"/*.changes)
cp "${files[@]}" "$out/"
for f in "${files[@]}"; do echo "build-deb: $out/$(basename "$f")"; done
