#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Detection latency (sync entry -> syncer in a snapshot) per backend, from sense_latency.

Each stamp line is "PID T_ENTER_MS T_RETURN_MS". An episode is a maximal run of observer
snapshots containing PID; episode k is matched to the first stamp whose entry precedes
it. Prints a table and writes latency.json into the result dir. Fails only when a sync
was never detected (the numbers themselves are reported, not asserted).
"""
import json
import os
import statistics
import sys

d = sys.argv[1]
r = json.load(open(os.path.join(d, "result.json")))
fails, out = [], {"poll_ms": r["poll_ms"], "backends": {}}
print("%-8s %5s %5s %10s %10s %10s %12s" % ("backend", "syncs", "seen", "median ms",
                                              "p90 ms", "max ms", "sync ms med"))
for b in r.get("backends", []):
    stamps = [l.split() for l in open(os.path.join(d, "stamps-%s.txt" % b)) if l.strip()]
    lines = [json.loads(l) for l in open(os.path.join(d, "observe-%s.jsonl" % b)) if l.strip()]
    if not stamps:
        fails.append("%s: no syncs ran" % b)
        continue
    pid = int(stamps[0][0])
    starts, present = [], False
    for l in lines:
        here = any(s["pid"] == pid for s in l["syncers"])
        if here and not present:
            starts.append(l["wall_ms"])
        present = here
    lat, missed = [], 0
    for s in stamps:
        t0, t1 = float(s[1]), float(s[2])
        ep = [x for x in starts if t0 - 5 <= x <= t1 + 50]
        if ep:
            lat.append(ep[0] - t0)
        else:
            missed += 1
    durs = [float(s[2]) - float(s[1]) for s in stamps]
    if missed:
        fails.append("%s: %d of %d syncs never seen" % (b, missed, len(stamps)))
    if lat:
        q = sorted(lat)
        row = {"syncs": len(stamps), "seen": len(lat), "median_ms": statistics.median(q),
               "p90_ms": q[min(len(q) - 1, int(0.9 * len(q)))], "max_ms": q[-1],
               "sync_median_ms": statistics.median(durs), "latencies_ms": q}
        out["backends"][b] = row
        print("%-8s %5d %5d %10.1f %10.1f %10.1f %12.0f" % (b, row["syncs"], row["seen"],
              row["median_ms"], row["p90_ms"], row["max_ms"], row["sync_median_ms"]))
json.dump(out, open(os.path.join(d, "latency.json"), "w"), indent=1)
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
