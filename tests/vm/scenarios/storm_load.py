#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The storm of storm_soak.sh (issue 15 item 2), run inside the guest.

  storm_load.py OUTDIR SECONDS SEED PHASE

PHASE "baseline": syncers only (no limits are set yet), for SECONDS: unthrottled durations.
PHASE "storm": throttled writers that never stop, syncers of every kind, daemon restarts.

One process, many threads, so every sync call is timed in-process with its thread id:
  - writers: one child process per cgroup (STORM_WRITERS="cg:dir ..."), each writing
    64 KiB..1 MiB chunks nonstop at a random rate around its cgroup's limit;
  - sync and syncfs (on each filesystem of STORM_FS) threads, back-to-back calls 10-200 ms
    apart, a multithreaded syncer (4 threads of one process calling sync());
  - `sync` processes started in STORM_SYNC_CG and some of them SIGKILLed mid-call (sync(2)
    is uninterruptible: the kill lands when the call returns);
  - a /proc sampler: every 20 ms, /proc/TID/syscall of every call in flight
    (samples-*.txt: "tid wall_ms nr");
  - in "storm", the daemon (STORM_DAEMON_CMD, a shell snippet that starts it and waits for
    READY=1) restarted by SIGTERM or SIGKILL every 8-20 s (restarts.txt).

Each call: "kind tid start_ms end_ms killed" in calls-PHASE.txt (wall clock, ms).
"""
import ctypes
import os
import random
import signal
import subprocess
import sys
import threading
import time

OUT, SECONDS, SEED, PHASE = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = random.Random(SEED)
libc = ctypes.CDLL("libc.so.6", use_errno=True)
stop = threading.Event()
lock = threading.Lock()
calls, samples = [], []
inflight = {}  # tid -> (kind, start_ms)
CG = "/sys/fs/cgroup"


def now_ms():
    return time.time() * 1000.0


def enter_cgroup(cg):
    with open(os.path.join(CG, cg.strip("/"), "cgroup.procs"), "w") as f:
        f.write("0")


def timed(kind, fn):
    tid = threading.get_native_id()
    t0 = now_ms()
    with lock:
        inflight[tid] = (kind, t0)
    try:
        fn()
    finally:
        t1 = now_ms()
        with lock:
            inflight.pop(tid, None)
            calls.append((kind, tid, t0, t1, 0))


def pause(r):
    stop.wait(r.uniform(0.01, 0.2))


def syncer(kind, target, seed):
    r = random.Random(seed)
    if target is None:
        fn = os.sync
    else:
        fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
        fn = lambda: libc.syncfs(fd)  # noqa: E731 (ctypes releases the GIL)
    while not stop.is_set():
        timed(kind, fn)
        pause(r)


def sync_processes(cg, seed):
    """`sync` processes in cg; about one in four SIGKILLed while inside the call."""
    r = random.Random(seed)
    while not stop.is_set():
        t0 = now_ms()
        p = subprocess.Popen(["/bin/sync"], preexec_fn=lambda: enter_cgroup(cg))
        with lock:
            inflight[p.pid] = ("sync-proc", t0)
        killed = 0
        if r.random() < 0.25:
            stop.wait(r.uniform(0.005, 0.1))
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                killed = 1
        p.wait()
        t1 = now_ms()
        with lock:
            inflight.pop(p.pid, None)
            calls.append(("sync-proc", p.pid, t0, t1, killed))
        pause(r)


def sampler():
    while not stop.is_set():
        with lock:
            tids = list(inflight)
        for tid in tids:
            try:
                with open("/proc/%d/syscall" % tid) as f:
                    first = f.read().split(" ", 1)[0].strip()
            except OSError:
                continue
            t = now_ms()
            samples.append((tid, t, first))
        stop.wait(0.02)


def writers():
    """One dd-like child per cgroup: chunks at a random rate around the limit, forever."""
    procs = []
    for i, spec in enumerate(os.environ.get("STORM_WRITERS", "").split()):
        cg, d = spec.split(":", 1)
        code = (
            "import os,random,time\n"
            "r=random.Random(%d)\n"
            "buf=b'x'*(1<<20)\n"
            "n=0\n"
            "while True:\n"
            "  p=os.path.join(%r,'w%%d'%%(n%%4))\n"
            "  with open(p,'wb') as f:\n"
            "    for _ in range(r.randint(1,4)):\n"
            "      f.write(buf[:r.choice([65536,262144,1048576])])\n"
            "      time.sleep(r.uniform(0.05,0.4))\n"
            "  n+=1\n" % (SEED * 100 + i, d))
        procs.append(subprocess.Popen(["/usr/bin/python3", "-c", code],
                                      preexec_fn=lambda cg=cg: enter_cgroup(cg)))
    return procs


def restarter(seed):
    r = random.Random(seed)
    cmd = os.environ["STORM_DAEMON_CMD"]
    with open(os.path.join(OUT, "restarts.txt"), "a") as log:
        while not stop.wait(r.uniform(8, 20)):
            how = r.choice(["TERM", "KILL"])
            t0 = now_ms()
            rc = subprocess.call(["bash", "-c", cmd, "restart", how])
            log.write("%s %.0f %.0f %d\n" % (how, t0, now_ms(), rc))
            log.flush()


def main():
    enter_cgroup(os.environ.get("STORM_SYNCER_CG", "/s1"))
    print("storm_load: phase %s, %.0f s, seed %d" % (PHASE, SECONDS, SEED), flush=True)
    threads = []
    ws = writers() if PHASE == "storm" else []
    spawn = lambda f, *a: threads.append(threading.Thread(target=f, args=a, daemon=True))  # noqa
    spawn(syncer, "sync", None, rng.random())
    for fs in os.environ.get("STORM_FS", "").split():
        spawn(syncer, "syncfs", fs, rng.random())
    for _ in range(4):  # the multithreaded syncer: threads of this process, all in sync()
        spawn(syncer, "sync-mt", None, rng.random())
    spawn(sync_processes, os.environ.get("STORM_SYNC_CG", "/s2"), rng.random())
    spawn(sampler)
    if PHASE == "storm" and os.environ.get("STORM_DAEMON_CMD"):
        spawn(restarter, rng.random())
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    for w in ws:
        w.kill()
    for t in threads:
        if t.name and t.is_alive():
            t.join(timeout=120)
    with open(os.path.join(OUT, "calls-%s.txt" % PHASE), "w") as f:
        for c in calls:
            f.write("%s %d %.1f %.1f %d\n" % c)
    with open(os.path.join(OUT, "samples-%s.txt" % PHASE), "w") as f:
        for s in samples:
            f.write("%d %.1f %s\n" % s)
    print("storm_load: %d calls, %d samples" % (len(calls), len(samples)), flush=True)


main()
