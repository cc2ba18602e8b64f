#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Detection-to-boost latency and idle cost of cxiosyncd (tracefs), one VM run.

    tests/bench/boost_latency.py [--build-dir DIR] [--baseline BIN] [--n 100]
                                 [--detector tracefs|procfs] [--idle-seconds 40]
                                 [--idle-cgroups 100,1000] [--idle-detectors tracefs,procfs]
                                 [--smp N] [--tcg-thread single|multi]
                                 [--json OUT.json] [--results DIR]

Latency: sync(2) entered (the syncer's own wall-clock stamp right before the call) ->
"action=boost" logged by the daemon (ms timestamps), over --n syncs; median, p95, p99,
max, and the first sync after the daemon's start apart (it used to wait on the drop-in
lookups). When the daemon writes its "boost latency" debug line (this tree's daemon does), the
split: kernel enter event -> line read from trace_pipe -> tick start -> snapshot ->
plan -> io.max written (trace clock "mono" = CLOCK_MONOTONIC, so the kernel's event time
compares with the daemon's clock). Idle: CPU of the daemon with 1,000 cgroups (or each
size of --idle-cgroups), 5 % of them limited, nothing syncing, as % of one core, for each
detector of --idle-detectors. --baseline BIN runs another cxiosyncd (e.g.
main's build) first in the same boot, for a before/after under the same guest load.
Targets (issue 15): median <= 5 ms, p99 <= 50 ms; idle <= 0.05 % of a core (tracefs), issue
30: <= 0.5 % at 1,000 cgroups (procfs). Printed, never
asserted (docs/architecture.md §7).
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})")
PHASES = ("event_to_read", "read_to_tick", "snapshot", "plan", "write")


def log_ms(line):
    """Wall-clock ms of a daemon log line (local time, as spdlog prints it)."""
    m = TS.match(line)
    if not m:
        return None
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
    return t.timestamp() * 1000


def pct(q, p):
    return q[min(len(q) - 1, int(round(p / 100.0 * (len(q) - 1))))] if q else None


def summary(vals):
    q = sorted(vals)
    if not q:
        return {"n": 0}
    return {"n": len(q), "median": statistics.median(q), "p95": pct(q, 95), "p99": pct(q, 99),
            "max": q[-1]}


def field(line, key):
    m = re.search(r"\b%s=(\S+)" % re.escape(key), line)
    return m.group(1) if m else None


def analyse(d, name):
    path = os.path.join(d, "stamps-%s.txt" % name)
    if not os.path.exists(path):  # --n 0
        return None
    stamps = [l.split() for l in open(path) if l.strip()]
    boosts, phases = [], {}
    for line in open(os.path.join(d, "daemon-%s.log" % name), errors="replace"):
        if "action=boost " in line:
            boosts.append((log_ms(line), field(line, "syncer_pid")))
        elif "boost latency " in line:
            tid = field(line, "syncer_tid")
            vals = {k: float(field(line, k)) for k in PHASES if field(line, k) not in (None, "-")}
            phases.setdefault(tid, []).append((log_ms(line), vals))
    lat, missed, split = [], 0, {k: [] for k in PHASES}
    worst, first = None, None
    for s in stamps:
        pid, t0, t1 = s[0], float(s[1]), float(s[2])
        hit = [t for t, p in boosts if p == pid and t is not None and t0 - 5 <= t <= t1 + 50]
        if not hit:
            missed += 1
            continue
        lat.append(hit[0] - t0)
        if s is stamps[0]:
            first = hit[0] - t0
        if worst is None or hit[0] - t0 > worst[0]:
            worst = (hit[0] - t0, t0)
        for t, vals in phases.get(pid, []):
            if t0 - 5 <= t <= t1 + 50:
                for k, v in vals.items():
                    split[k].append(v)
                break
    durs = [float(s[2]) - float(s[1]) for s in stamps]
    return {"syncs": len(stamps), "boosted": len(lat), "not_boosted": missed,
            "latency_ms": summary(lat), "first_ms": first, "sync_ms": summary(durs),
            "phases_ms": {k: summary(v) for k, v in split.items() if v},
            "latencies_ms": sorted(lat)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.environ.get("CXIOSYNC_BUILD_DIR",
                                                           os.path.join(SRC, "build")))
    ap.add_argument("--baseline", help="another cxiosyncd binary, run first as 'before'")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--idle-seconds", type=int, default=40)
    ap.add_argument("--idle-cgroups", default="1000", help="sizes, comma-separated")
    ap.add_argument("--idle-detectors", default="tracefs", help="comma-separated")
    ap.add_argument("--detector", default="tracefs", help="detector of the latency part")
    ap.add_argument("--json", default=os.path.join(SRC, "out", "bench-boost-latency.json"))
    ap.add_argument("--results", help="analyse a kept result dir instead of running the VM")
    ap.add_argument("--keep", help="copy the guest's result dir here")
    # The default guest (2 vCPUs on one TCG thread) runs its vCPUs in turn: a woken daemon
    # on the other vCPU waits until the running one idles or QEMU's 100 ms kick. --smp 1
    # or --tcg-thread multi show the daemon's own latency without that turn-taking.
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--tcg-thread", choices=["single", "multi"], default="single")
    args = ap.parse_args()

    tmp = None
    if args.results:
        d = args.results
    else:
        tmp = tempfile.mkdtemp(prefix="cxlat-")
        daemons = "after=%s" % os.path.join(os.path.abspath(args.build_dir), "daemon", "cxiosyncd")
        if args.baseline:
            daemons = "before=%s %s" % (os.path.abspath(args.baseline), daemons)
        cmd = [sys.executable, os.path.join(SRC, "tests", "vm", "vmrun.py"),
               "--build-dir", args.build_dir, "--results-dir", args.keep or tmp, "--quiet",
               "--timeout", "2400", "--scenario-timeout", "2300",
               "--smp", str(args.smp), "--tcg-thread", args.tcg_thread,
               "--env", "LAT_N=%d" % args.n, "--env", "LAT_DAEMONS=%s" % daemons,
               "--env", "IDLE_SECONDS=%d" % args.idle_seconds,
               "--env", "IDLE_CGROUPS=%s" % args.idle_cgroups.replace(",", " "),
               "--env", "IDLE_DETECTORS=%s" % args.idle_detectors.replace(",", " "),
               "--env", "LAT_DETECTOR=%s" % args.detector,
               os.path.join(HERE, "boost_latency.sh")]
        rc = subprocess.call(cmd)
        d = os.path.join(args.keep or tmp, "boost_latency")
        if rc != 0 or not os.path.exists(os.path.join(d, "result.json")):
            print("benchmark VM run failed (exit %d); results in %s" % (rc, d), file=sys.stderr)
            return 1
    r = json.load(open(os.path.join(d, "result.json")))
    out = {"n": r.get("n"), "smp": args.smp, "tcg_thread": args.tcg_thread, "daemons": {}}
    print("detection -> boost (%s; QEMU TCG guest, %d vCPU, %s-threaded; Debian kernel; cg1 "
          "wbps=1 MiB/s holds %s MiB, sync from cg2); target median <= 5 ms, p99 <= 50 ms"
          % (args.detector, args.smp, args.tcg_thread, r.get("lat_mib")))
    print("%-8s %6s %7s %9s %8s %8s %8s %9s %12s" % ("daemon", "syncs", "boosted", "median ms",
                                                      "p95 ms", "p99 ms", "max ms", "first ms",
                                                      "sync med ms"))
    f = lambda v: "-" if v is None else "%.1f" % v
    for name in r.get("daemons", []):
        a = analyse(d, name)
        out["daemons"][name] = a or {}
        if a is None:
            continue
        L = a["latency_ms"]
        print("%-8s %6d %7d %9s %8s %8s %8s %9s %12s" % (name, a["syncs"], a["boosted"],
              f(L.get("median")), f(L.get("p95")), f(L.get("p99")), f(L.get("max")),
              f(a["first_ms"]), f(a["sync_ms"].get("median"))))
        for k in PHASES:
            p = a["phases_ms"].get(k)
            if p:
                print("  %-14s median %7.2f  p95 %7.2f  p99 %7.2f  max %7.2f ms" % (
                    k, p["median"], p["p95"], p["p99"], p["max"]))
    print("idle cost: nothing syncing, 5 %% of the cgroups write-limited; targets: tracefs <= "
          "0.05 %% of a core, procfs <= 0.5 %% at 1,000 cgroups")
    print("%-8s %-8s %8s %8s %10s %9s %8s %9s" % ("daemon", "detector", "cgroups", "limited",
                                                   "CPU ms", "% core", "wakeups", "RSS KiB"))
    out["idle"] = []
    for run in r.get("idle_runs", []):
        name, det, size = run.split("_")
        ns, wall = r.get("idle_cpu_ns_%s" % run), r.get("idle_wall_ms_%s" % run)
        if ns is None or not wall:
            continue
        share = ns / 1e6 / wall * 100
        row = {"daemon": name, "detector": det, "size": int(size),
               "cgroups": r.get("idle_cgroups_%s" % size), "limited": r.get("idle_limited_%s" % size),
               "cpu_ms": ns / 1e6, "wall_ms": wall, "core_percent": share,
               "cpu_ms_from_stat_ticks": r.get("idle_cpu_ticks_ms_%s" % run),
               "rss_kb": r.get("idle_rss_kb_%s" % run), "wakeups": r.get("idle_wakeups_%s" % run)}
        out["idle"].append(row)
        print("%-8s %-8s %8s %8s %10.1f %9.3f %8s %9s" % (name, det, row["cgroups"], row["limited"],
              row["cpu_ms"], share, row["wakeups"], row["rss_kb"]))
    out["raw"] = r
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump(out, fh, indent=1)
    print("JSON: %s" % args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
