#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Regenerates tests/fixtures/kernel-X.Y/ from a real kernel: boots the VM harness with the
# capture_fixtures scenario and copies what it read into the source tree.
#   tests/vm/capture-fixtures.sh [--out DIR] [--kernel VERSION]
# --out DIR writes DIR/kernel-X.Y instead of tests/fixtures/kernel-X.Y (to compare first).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
base=$src/tests/fixtures
if [ "${1:-}" = --out ]; then
	base=$(mkdir -p "$2" && cd "$2" && pwd)
	shift 2
fi
tmp=$(mktemp -d /tmp/cxvm-capture.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

/usr/bin/python3 "$here/vmrun.py" --timeout 240 --results-dir "$tmp" "$@" capture_fixtures
kver=$(jq -r .kernel "$tmp/capture_fixtures/result.json")
series=$(echo "$kver" | cut -d. -f1-2)
dst=$base/kernel-$series
rm -rf "$dst"
mkdir -p "$dst"
cp -r "$tmp/capture_fixtures/files/." "$dst/"
jq . "$tmp/capture_fixtures/result.json" >"$dst/meta.json"
echo "capture-fixtures: wrote $(find "$dst" -type f | wc -l) files to $dst (kernel $kver)"
