#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: does a "workers" setting change throughput? The 2020 multiple-loop-workers
# experiment, reproduced on the real kernel (one VM run, tests/vm/vmrun.py): 4 concurrent
# sequential direct-I/O readers of a big file in ext4 on a block device whose backing file
# sits on a latency-bound store (dm-delay over brd). Rows: kernel loop buffered, kernel loop
# direct I/O (default queue depth, and 4), nbd multi-worker backend with 1, 2, 4, 8 workers.
#
#   tests/bench/loop_workers.sh [--build-dir DIR] [--delay-ms N] [--seconds N] [--reps N]
#                               [--via tool|ctl] [--out FILE.json]
#
# --via ctl: devices set up through cxiosyncctl and cxiosyncd (loop add --backend nbd
# --workers N) instead of cxiosync-loop and a hand-started server.
#
# Prints a table (MB/s, ratio to the kernel buffered loop) and writes JSON. Under TCG
# emulation on a loaded host, absolute numbers are low and noisy: compare rows of one run.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${CXIOSYNC_BUILD_DIR:-$src/build}
delay=50 secs=6 reps=1 out="" via=tool
while [ $# -gt 0 ]; do
	case $1 in
	--build-dir) build=$2; shift 2 ;;
	--delay-ms) delay=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--via) via=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "usage: $0 [--build-dir DIR] [--delay-ms N] [--seconds N] [--reps N] [--via tool|ctl] [--out FILE.json]" >&2; exit 2 ;;
	esac
done
[ -n "$out" ] || out=$build/bench/loop_workers.json
for b in cxiosync-loop cxiosync-nbd-server $([ "$via" = ctl ] && echo cxiosyncd); do
	[ -x "$build/daemon/$b" ] || { echo "build $b first ($build)" >&2; exit 2; }
done
[ "$via" != ctl ] || [ -x "$build/dbus/cxiosyncctl" ] || { echo "build cxiosyncctl first ($build)" >&2; exit 2; }
res=$(mktemp -d /tmp/cxl-wbench.XXXXXX)
trap 'rm -rf "$res"' EXIT
load=$(cut -d' ' -f1-3 /proc/loadavg)
python3 "$src/tests/vm/vmrun.py" --build-dir "$build" --results-dir "$res" --mem 1536 \
	--timeout 1500 --scenario-timeout 1400 \
	--env "CXL_BENCH_DELAY_MS=$delay" --env "CXL_BENCH_SECONDS=$secs" --env "CXL_BENCH_REPS=$reps" \
	--env "CXL_BENCH_VIA=$via" \
	"$src/tests/bench/loop_workers.guest.sh"
mkdir -p "$(dirname "$out")"
python3 - "$res/loop_workers.guest/result.json" "$out" "$load" "$(nproc)" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
labels = {"loop_buffered": "kernel loop, buffered", "loop_dio": "kernel loop, direct I/O",
          "loop_dio_qd4": "kernel loop, direct I/O, qd 4",
          "nbd1": "nbd backend, 1 worker", "nbd2": "nbd backend, 2 workers",
          "nbd4": "nbd backend, 4 workers", "nbd8": "nbd backend, 8 workers"}
rows = r["rows"].split()
reps = r["reps"]
out = {"benchmark": "loop_workers", "via": r.get("via", "tool"), "kernel": r.get("kernel"), "delay_ms": r["delay_ms"],
       "seconds": r["seconds"], "bs": r["bs"], "readers": r["readers"],
       "region_mb": r["region_mb"], "guest_cpus": r.get("nproc"),
       "host_loadavg_before": sys.argv[3], "host_cpus": int(sys.argv[4]), "rows": {}}
med = {}
for row in rows:
    runs = [r["r%d_%s" % (i, row)] for i in range(1, reps + 1)]
    med[row] = statistics.median(x["mbs"] for x in runs)
    out["rows"][row] = {"label": labels.get(row, row), "runs": runs, "mbs_median": med[row]}
base = med.get("loop_buffered")
print("%d readers, sequential, direct I/O, bs %s, %d s each; backing: ext4 on dm-delay "
      "(%d ms per read) over brd; kernel %s, %s guest CPUs (TCG), host load %s on %s CPUs"
      % (r["readers"], r["bs"], r["seconds"], r["delay_ms"], r.get("kernel"), r.get("nproc"),
         sys.argv[3], sys.argv[4]))
print("%-28s %10s %12s %s" % ("", "MB/s", "x buffered", "runs"))
for row in rows:
    ratio = med[row] / base if base else float("nan")
    out["rows"][row]["ratio_to_loop_buffered"] = round(ratio, 3)
    print("%-28s %10.2f %11.2fx %s" % (labels.get(row, row), med[row], ratio,
          " ".join("%.2f" % x["mbs"] for x in out["rows"][row]["runs"])))
json.dump(out, open(sys.argv[2], "w"), indent=2)
print("JSON: " + sys.argv[2])
PY
