#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The main job: shows the sync priority inversion on a real kernel.
# Boots Debian's kernel under QEMU (tests/vm/vmrun.py) and prints how long `sync` takes
# in an unthrottled cgroup while another cgroup holds N MiB of dirty page cache behind
# io.max wbps=1MiB/s, against the same sync with no limit.
#
#   bash scripts/demo.sh                 (Debian 12's own kernel, 6.1; DEMO_SIZES="8,16,32")
#   bash scripts/demo.sh --kernel 6.12   (Debian 13's kernel, fetched once by
#                                         scripts/fetch-kernel.sh into a cache, not installed)
#   bash scripts/demo.sh --kernel 7.2    (Debian's 7.2 from trixie-backports, the same way)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)

kernel=
case "${1:-}" in
"") ;;
--kernel) kernel=${2:?--kernel wants a series, e.g. 6.12 or 7.2} ;;
--kernel=*) kernel=${1#--kernel=} ;;
*) echo "usage: $0 [--kernel 6.12|7.2]" >&2; exit 2 ;;
esac

bash scripts/install-deps.sh

kargs=()
kname=$(printf '%s\n' /boot/vmlinuz-* | sed 's,.*/vmlinuz-,,' | sort -V | tail -1)
if [ -n "$kernel" ]; then
	kdir=$(bash scripts/fetch-kernel.sh --series "$kernel")
	kargs=(--kernel-dir "$kdir")
	kname=$(printf '%s\n' "$kdir"/boot/vmlinuz-* | sed 's,.*/vmlinuz-,,' | sort -V | tail -1)
fi

sizes=${DEMO_SIZES:-8,16,32}
modes=unlimited,limited,cxiosyncd
build=$src/build

# What the demo needs built: the daemon for the "with cxiosyncd" column (its VM mode lives
# in tests/vm/scenarios/sync_inversion.sh; the column title in tests/bench/sync_inversion).
targets=(cxiosyncd)
if [ ${#targets[@]} -gt 0 ]; then
	echo "== building ${targets[*]}"
	cmake --preset default >/dev/null
	cmake --build --preset default --target "${targets[@]}"
fi

cat <<EOF

== cxiosync demo: the sync inversion on a real kernel
   Debian's $kname kernel under QEMU, cgroup v2 with io + memory, ext4 on a virtio disk.
   cg1: a writer dirties N MiB (dd, no fsync); cg1's io.max is none or wbps=1MiB/s.
   cg2: no limit at all; runs \`sync\`. We time that sync.
   (booting the VM; this takes about 2 minutes)
EOF
tests/bench/sync_inversion --sizes "$sizes" --modes "$modes" --build-dir "$build" \
	--unlimited-tries 2 "${kargs[@]}" --out "$build/demo/sync_inversion${kernel:+-$kernel}.json"
cat <<EOF
cg2 has no limit, yet its sync waits for cg1's dirty pages, written at cg1's 1 MiB/s:
the sync takes about N seconds instead of a fraction of one. That is the inversion
cxiosyncd removes by lifting cg1's limit only while a foreign sync waits.
EOF
