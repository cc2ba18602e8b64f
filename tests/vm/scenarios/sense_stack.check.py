#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Host check for sense_stack: the device stack cxiosync reads from a real sysfs."""
import json
import os
import sys

d = sys.argv[1]
r = json.load(open(os.path.join(d, "result.json")))
once = json.load(open(os.path.join(d, "once.json")))
dev = once["devices"]
fails = []


def expect(upper, lower, what):
    got = dev.get(upper)
    if got != [lower]:
        fails.append("%s: devices[%s] = %s, expected [%s]" % (what, upper, got, lower))
    else:
        print("sense_stack: %s: %s -> %s" % (what, upper, lower))


expect(r["loopA"], r["vda"], "loop on a file on the scratch disk")
expect(r["loopB"], r["loopA"], "loop on a file on a partition (mapped to its whole disk)")
if r["dm"]:
    expect(r["dm"], r["loopB"], "dm-linear over a loop device")
else:
    print("sense_stack: dm-linear not available, skipped")
if r["loopAp1"] in dev:
    fails.append("partition %s listed as a stack edge" % r["loopAp1"])
lines = [json.loads(l) for l in open(os.path.join(d, "observe.jsonl")) if l.strip()]
hits = [s for l in lines for s in l["syncers"] if s["pid"] == r["syncfs_pid"]]
if not hits:
    fails.append("syncfs on the partition filesystem never seen")
elif hits[0]["target_device"] != r["loopA"]:
    fails.append("syncfs target_device %s, expected %s (whole disk of %s)"
                 % (hits[0]["target_device"], r["loopA"], r["loopAp1"]))
else:
    print("sense_stack: syncfs on %s's filesystem: target_device %s (whole disk)"
          % (r["loopAp1"], hits[0]["target_device"]))
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
