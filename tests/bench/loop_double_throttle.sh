#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: ext4 on the raw disk vs on a buffered kernel loop device vs on a loop device set
# up by cxiosync (direct I/O), with vm.dirty_bytes small (4 MiB) so the loop-over-page-cache
# path is dirty-throttled twice. One VM run (tests/vm/vmrun.py, Debian kernel under QEMU).
#
#   tests/bench/loop_double_throttle.sh [--build-dir DIR] [--reps N] [--out FILE.json]
#
# Prints a table (min/median/max per row, ratio of medians to raw) and writes JSON.
# Timing under TCG emulation is slow and noisy: compare rows of one run, not across machines.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${CXIOSYNC_BUILD_DIR:-$src/build}
reps=3
out=""
while [ $# -gt 0 ]; do
	case $1 in
	--build-dir) build=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "usage: $0 [--build-dir DIR] [--reps N] [--out FILE.json]" >&2; exit 2 ;;
	esac
done
[ -n "$out" ] || out=$build/bench/loop_double_throttle.json
[ -x "$build/daemon/cxiosync-loop" ] || { echo "build cxiosync-loop first ($build)" >&2; exit 2; }
res=$(mktemp -d /tmp/cxl-bench.XXXXXX)
trap 'rm -rf "$res"' EXIT
python3 "$src/tests/vm/vmrun.py" --build-dir "$build" --results-dir "$res" \
	--timeout 2400 --scenario-timeout 2300 --disk-mb 1024 \
	--env "CXL_BENCH_REPS=$reps" "$src/tests/bench/loop_double_throttle.guest.sh"
mkdir -p "$(dirname "$out")"
python3 - "$res/loop_double_throttle.guest/result.json" "$out" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
rows = [("raw", "raw disk (ext4 on virtio)", r["raw_ms"], None),
        ("loop_buffered", "kernel loop, buffered", r["loop_buffered_ms"],
         r.get("loop_buffered_backing_cached")),
        ("loop_cxiosync", "loop by cxiosync (direct I/O)", r["loop_cxiosync_ms"],
         r.get("loop_cxiosync_backing_cached"))]
raw_med = statistics.median(r["raw_ms"])
out = {"benchmark": "loop_double_throttle", "kernel": r.get("kernel"),
       "dirty_bytes": r["dirty_bytes"], "total_bytes": r["total_bytes"], "files": r["files"],
       "reps": r["reps"], "loop_cxiosync_dio": r.get("loop_cxiosync_dio"),
       "loop_buffered_dio": r.get("loop_buffered_dio"), "rows": {}}
print("mkfs + mount + write %d files (%d MiB, %.0fx vm.dirty_bytes=%d KiB) + umount, kernel %s"
      % (r["files"], r["total_bytes"] >> 20, r["total_bytes"] / r["dirty_bytes"],
         r["dirty_bytes"] >> 10, r.get("kernel")))
print("%-32s %8s %8s %8s %9s %14s" % ("", "min ms", "median", "max ms", "x raw",
                                       "backing cached"))
for key, label, v, cache in rows:
    med = statistics.median(v)
    out["rows"][key] = {"label": label, "ms": v, "min": min(v), "median": med, "max": max(v),
                        "ratio_to_raw": round(med / raw_med, 3), "backing_cached_bytes": cache}
    c = "-" if not cache else "%.1f MiB" % (statistics.median(cache) / 1048576.0)
    print("%-32s %8d %8d %8d %8.2fx %14s" % (label, min(v), med, max(v), med / raw_med, c))
json.dump(out, open(sys.argv[2], "w"), indent=2)
print("JSON: " + sys.argv[2])
PY
