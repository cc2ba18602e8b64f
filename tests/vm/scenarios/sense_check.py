#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Host-side assertions shared by sense_tracefs / sense_procfs (issue 4 VM proofs).

Inputs (the scenario's result dir): result.json (cases with pid, cgroup, t0/t1 wall ms)
and observe.jsonl (cxiosync-observe --json --changes: one snapshot per change of the
syncer set, each with wall_ms). For every case:
  - a syncer of the case's process appears with the right cgroup and syscall,
  - for the multi-threaded case its tid is not the pid,
  - with tracefs (not for fsync), it names cg1 (by inode and path) in waits_on,
  - syncfs/fsync carry the scratch disk as target_device,
  - it disappears again (exit seen) and no syncer is left at the end (no phantom).
Prints detection latency (first snapshot showing the syncer - spawn time).
"""
import json
import os
import statistics
import sys

EXPECT_SYSCALL = {"sync": "sync", "syncfs": "syncfs", "fsync": "fsync", "self": "sync",
                  "thread": "sync", "kill": "sync", "removed": "sync"}


def main(result_dir):
    r = json.load(open(os.path.join(result_dir, "result.json")))
    backend = r["backend"]
    lines = [json.loads(l) for l in open(os.path.join(result_dir, "observe.jsonl")) if l.strip()]
    fails = []
    if not lines:
        fails.append("observer printed nothing")
    if any(l["detector"] != backend for l in lines):
        fails.append("observer used detector %s, wanted %s" % (lines[0]["detector"], backend))
    latencies = []
    for c in r.get("cases", []):
        name, pid = c["name"], c["pid"]
        hits = [(l, s) for l in lines for s in l["syncers"] if s["pid"] == pid]
        if not hits:
            fails.append("%s: syncer pid %d never seen" % (name, pid))
            continue
        first_line, s = hits[0]
        lat = first_line["wall_ms"] - c["t0"]
        latencies.append(lat)
        desc = "%s: tid %d pid %d %s in %s, seen after %d ms (call took %d ms)" % (
            name, s["tid"], pid, s["syscall"], s["cgroup"], lat, c["t1"] - c["t0"])
        if s["cgroup"] != c["cg"]:
            fails.append("%s: cgroup %s, expected %s" % (name, s["cgroup"], c["cg"]))
        if s["syscall"] != EXPECT_SYSCALL[name]:
            fails.append("%s: syscall %s" % (name, s["syscall"]))
        if name == "thread" and s["tid"] == pid:
            fails.append("thread: syncer tid == pid (%d): not the worker thread" % pid)
        if name != "thread" and s["tid"] != pid:
            fails.append("%s: tid %d != pid %d" % (name, s["tid"], pid))
        if name in ("syncfs", "fsync") and s["target_device"] != r["scratch_majmin"]:
            fails.append("%s: target_device %s, expected %s"
                         % (name, s["target_device"], r["scratch_majmin"]))
        # writeback_queue names the cgroups whose *dirty* inodes a sync queues work for;
        # pages already under writeback when the sync starts are waited on without an
        # event. Required for the plain sync/syncfs cases, reported for the others.
        if backend == "tracefs" and name in ("sync", "syncfs"):
            waits = [w for (_, x) in hits for w in x["waits_on"]]
            cg1 = [w for w in waits if w["cgroup_ino"] == r["cg1_ino"]]
            if not cg1:
                fails.append("%s: waits_on never named cg1 (ino %d): %s"
                             % (name, r["cg1_ino"], waits))
            elif cg1[0]["cgroup"] != "/cg1" or cg1[0]["bdi"] != r["scratch_majmin"]:
                fails.append("%s: waits_on %s" % (name, cg1[0]))
            else:
                desc += ", waits on /cg1 (ino %d) bdi %s" % (r["cg1_ino"], cg1[0]["bdi"])
        elif backend == "tracefs":
            waits = sorted({(w["cgroup"], w["bdi"]) for (_, x) in hits for w in x["waits_on"]})
            desc += ", waits_on %s" % (waits or "none seen")
        # Exit seen: a later snapshot without this pid, soon after the call returned.
        after = [l for l in lines if l["wall_ms"] >= first_line["wall_ms"]
                 and not any(x["pid"] == pid for x in l["syncers"])]
        if not after:
            fails.append("%s: pid %d never left the syncer set (phantom)" % (name, pid))
        else:
            gone_ms = after[0]["wall_ms"] - c["t1"]
            desc += ", gone %+d ms after return" % gone_ms
            if gone_ms > 1000:
                fails.append("%s: syncer removed only %d ms after the call returned"
                             % (name, gone_ms))
        if name == "kill":
            desc += ", killed at +%d ms" % (c["t_kill"] - c["t0"])
        print("sense_%s: %s" % (backend, desc))
    if lines and lines[-1]["syncers"]:
        fails.append("syncers left at the end: %s" % lines[-1]["syncers"])
    t_rm = r.get("t_rmdir_cg3")
    if t_rm is not None:
        late = [l for l in lines if l["wall_ms"] > t_rm + 1000
                and any(g["path"] == "/cg3" for g in l["cgroups"])]
        if late:
            fails.append("removed cgroup /cg3 still reported %d ms after rmdir"
                         % (late[0]["wall_ms"] - t_rm))
    if r.get("observer_rc") not in (0, None):
        fails.append("observer exit status %s" % r.get("observer_rc"))
    if backend == "tracefs" and r.get("instances_left", "").strip():
        fails.append("tracefs instances left after exit: %s" % r["instances_left"])
    if latencies:
        print("sense_%s: detection latency over %d syncers: median %.0f ms, max %d ms"
              % (backend, len(latencies), statistics.median(latencies), max(latencies)))
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
