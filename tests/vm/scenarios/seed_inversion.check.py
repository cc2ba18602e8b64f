#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Host-side assertions for vm.seed_inversion (argument: the scenario's result dir).

The inversion is real when, with cg1 limited to L bytes/s and D bytes dirty in cg1,
a sync from the unlimited cg2 takes at least 0.7 * D / L seconds, and the same sync
without the limit takes under a quarter of D / L. The writeback must also be charged
to cg1 (cgroup writeback works), else the limit could not have been the cause.
"""
import json
import os
import sys

r = json.load(open(os.path.join(sys.argv[1], "result.json")))
limit = r["limit_bps"]
fails = []
for mib in r["sizes_mib"]:
    runs = {}
    for x in r["runs"]:  # several unlimited runs: keep the fastest (noise only adds time)
        if x["mib"] == mib and (x["mode"] not in runs
                                or x["sync_ms"] < runs[x["mode"]]["sync_ms"]):
            runs[x["mode"]] = x
    n_unl = sum(1 for x in r["runs"] if x["mib"] == mib and x["mode"] == "unlimited")
    dirty = mib * 1024 * 1024
    expect_s = dirty / limit
    lim, unl = runs.get("limited"), runs.get("unlimited")
    if not lim or not unl:
        fails.append("%d MiB: missing a run (%s)" % (mib, sorted(runs)))
        continue
    lim_s, unl_s = lim["sync_ms"] / 1000, unl["sync_ms"] / 1000
    print("seed_inversion: %d MiB dirty in cg1, sync from cg2: no limit %.2f s "
          "(best of %d), wbps=%d %.2f s (dirty/limit = %.1f s, ratio %.1fx)"
          % (mib, unl_s, n_unl, limit, lim_s, expect_s, lim_s / max(unl_s, 0.001)))
    if lim_s < 0.7 * expect_s:
        fails.append("throttled sync took %.2f s < 0.7 x %.1f s: no inversion"
                     % (lim_s, expect_s))
    if unl_s >= 0.25 * expect_s:
        fails.append("unthrottled sync took %.2f s >= %.2f s (a quarter of %.1f s)"
                     % (unl_s, 0.25 * expect_s, expect_s))
    for x in (lim, unl):
        if x["cg1_wbytes_delta"] < 0.9 * dirty:
            fails.append("%s: cg1 io.stat wbytes grew by %d < 0.9 x %d: writeback not "
                         "charged to cg1" % (x["mode"], x["cg1_wbytes_delta"], dirty))
    if "wbps=%d" % limit not in lim["io_max"]:
        fails.append("limited run: io.max was %r" % lim["io_max"])
for f in fails:
    print("seed_inversion: FAIL: " + f)
sys.exit(1 if fails else 0)
