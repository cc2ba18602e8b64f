#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""cxiosync real-kernel VM harness.

Boots Debian's installed kernel under QEMU (TCG), with the host's root filesystem
shared read-only over 9p plus a tmpfs overlay, and runs scenario scripts inside.
Each scenario's exit status and result files come back through a second, writable
9p share (a host temp dir), never by parsing the console.

    vmrun.py [options] SCENARIO [SCENARIO...]

SCENARIO is a name (tests/vm/scenarios/NAME.sh) or a path to a script. All scenarios
given run in one boot, one after another, each with a freshly formatted scratch disk.
If tests/vm/scenarios/NAME.check.py exists it runs on the host afterwards with the
scenario's result directory as its argument; its exit status decides the verdict.

Exit status: 0 all scenarios passed, 1 something failed, 77 skipped
(only when CXIOSYNC_SKIP_VM=1), 130/143 interrupted.
Python 3 standard library only.
"""

import argparse
import ctypes
import glob
import hashlib
import json
import lzma
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
SKIP_CODE = 77
HUNG_GUEST_SECONDS = 60  # soft lockup reported for this long: the guest is gone (see pump())
TMP_PREFIX = "cxvm-"

# Loaded in the initramfs, dependencies first (resolved with modinfo at build time).
INITRAMFS_MODULES = ["virtio_pci", "9pnet_virtio", "9p", "overlay", "virtio_blk", "ext4",
                     "configfs"]


# --init=systemd: host units that only cost time in a test VM (timers that may fire at
# boot, coldplug of every device by udev, network time).
SYSTEMD_MASK = ["systemd-udev-trigger.service", "systemd-udev-settle.service",
                "systemd-hwdb-update.service", "systemd-timesyncd.service",
                "systemd-pstore.service", "systemd-journal-flush.service",
                "keyboard-setup.service", "console-setup.service", "timers.target",
                "systemd-tmpfiles-clean.timer", "apt-daily.timer", "apt-daily-upgrade.timer",
                "dpkg-db-backup.timer", "e2scrub_all.timer", "fstrim.timer", "man-db.timer",
                "systemd-binfmt.service", "proc-sys-fs-binfmt_misc.automount",
                "systemd-firstboot.service", "systemd-machine-id-commit.service",
                "ldconfig.service", "systemd-update-done.service",
                # Debian 13 mounts a tmpfs on /tmp (tmp.mount): it would hide a checkout or
                # build tree under the host's /tmp that stage 1 bound into the guest.
                "tmp.mount"]


def log(msg):
    print("cxvm: " + msg, flush=True)


class Interrupted(Exception):
    def __init__(self, signum):
        super().__init__("signal %d" % signum)
        self.signum = signum


# ---------------------------------------------------------------- environment checks

def newest(versions):
    def key(v):
        return [int(x) if x.isdigit() else x for x in re.split(r"[.+-]", v)]
    return sorted(versions, key=key)[-1]


def pick_kernel(requested, kernel_dir=None):
    """Returns (version, vmlinuz path, module base dir) or raises RuntimeError.

    The module base dir is "/" for a kernel installed on the host (/boot, /lib/modules),
    or kernel_dir for one unpacked elsewhere (scripts/fetch-kernel.sh: KDIR/boot/vmlinuz-V
    and KDIR/lib/modules/V with modules.dep), so a second kernel never has to be installed
    into the host's /boot, where it would become everybody's default."""
    base = os.path.abspath(kernel_dir) if kernel_dir else "/"
    boot = os.path.join(base, "boot")
    mods = os.path.join(base, "lib", "modules")
    if requested:
        ver = requested
    else:
        cands = []
        for path in glob.glob(os.path.join(boot, "vmlinuz-*")):
            v = os.path.basename(path)[len("vmlinuz-"):]
            if os.path.isdir(os.path.join(mods, v, "kernel")):
                cands.append(v)
        if not cands:
            if kernel_dir:
                raise RuntimeError("no kernel in %s: need boot/vmlinuz-VERSION and "
                                   "lib/modules/VERSION (scripts/fetch-kernel.sh)" % base)
            raise RuntimeError(
                "no kernel image: need /boot/vmlinuz-VERSION with /lib/modules/VERSION "
                "(install linux-image-amd64: bash scripts/install-deps.sh)")
        ver = newest(cands)
    image = os.path.join(boot, "vmlinuz-%s" % ver)
    if not os.access(image, os.R_OK):
        raise RuntimeError("kernel image %s missing or unreadable" % image)
    if not os.path.isfile(os.path.join(mods, ver, "modules.dep")):
        raise RuntimeError("modules for kernel %s missing in %s (no modules.dep)" % (ver, mods))
    if kernel_dir and not re.match(r"^/[A-Za-z0-9_.+/-]+$", base):
        # It goes on the kernel command line (cxvm.moddir=) and into a shell word.
        raise RuntimeError("kernel dir %r: use a path of [A-Za-z0-9_.+/-]" % base)
    return ver, image, base


def find_tool(names, what):
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    raise RuntimeError("%s not found (%s); install with: bash scripts/install-deps.sh"
                       % (what, " or ".join(names)))


# ---------------------------------------------------------------- kernel image

def cache_dir():
    d = os.environ.get("CXIOSYNC_VM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cxiosync-vm")
    os.makedirs(d, exist_ok=True)
    return d


def uncompressed_kernel(image):
    """The ELF vmlinux inside a bzImage, cached. QEMU boots it through its PVH entry
    (CONFIG_PVH), which skips the in-guest XZ decompression: ~13 s under TCG.
    Returns None (use the bzImage) if the payload is not xz/gzip or not an ELF."""
    st = os.stat(image)
    key = hashlib.sha256(("%s:%d:%d" % (image, st.st_size, st.st_mtime_ns)).encode())
    try:
        d = cache_dir()
    except OSError:
        return None
    out = os.path.join(d, "vmlinux-%s-%s" % (os.path.basename(image), key.hexdigest()[:16]))
    if os.path.exists(out):
        return out
    with open(image, "rb") as f:
        data = f.read()
    elf = None
    i = data.find(b"\xfd7zXZ\x00")
    if i >= 0:
        try:
            elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[i:])
        except lzma.LZMAError:
            elf = None
    if elf is None:
        i = data.find(b"\x1f\x8b\x08\x00")
        if i >= 0:
            try:
                elf = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[i:])
            except zlib.error:
                elf = None
    if not elf or elf[:4] != b"\x7fELF":
        return None
    try:
        for old in glob.glob(os.path.join(d, "vmlinux-%s-*" % os.path.basename(image))):
            if not old.endswith(".tmp"):  # another run may be writing its .tmp
                os.unlink(old)
        tmp = "%s.%d.tmp" % (out, os.getpid())
        with open(tmp, "wb") as f:
            f.write(elf)
        os.rename(tmp, out)
    except OSError as e:
        log("cannot cache the uncompressed kernel (%s); booting the bzImage" % e)
        return None
    return out


# ---------------------------------------------------------------- initramfs

class Cpio:
    """Minimal writer for the newc cpio format the kernel unpacks."""

    def __init__(self):
        self.buf = bytearray()
        self.ino = 1

    def _entry(self, name, mode, data=b"", rdev=(0, 0), nlink=1):
        name_b = name.encode() + b"\0"
        hdr = "070701" + "".join("%08x" % v for v in (
            self.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1],
            len(name_b), 0))
        self.ino += 1
        self.buf += hdr.encode() + name_b
        self.buf += b"\0" * ((4 - len(self.buf) % 4) % 4)
        self.buf += data
        self.buf += b"\0" * ((4 - len(self.buf) % 4) % 4)

    def dir(self, name):
        self._entry(name, 0o040755, nlink=2)

    def file(self, name, data, mode=0o644):
        self._entry(name, 0o100000 | mode, data)

    def symlink(self, name, target):
        self._entry(name, 0o120777, target.encode())

    def chardev(self, name, major, minor, mode=0o600):
        self._entry(name, 0o020000 | mode, rdev=(major, minor))

    def finish(self):
        self._entry("TRAILER!!!", 0)
        self.buf += b"\0" * ((512 - len(self.buf) % 512) % 512)
        return bytes(self.buf)


def module_order(kver, names, base="/"):
    """Module file paths in load order (dependencies first). The dependencies come from
    modinfo, so the kernels' layouts need no list here: 6.1 has 9p -> netfs + fscache,
    6.12 folded fscache into netfs (and ships .ko.xz)."""
    order, seen = [], set()

    def visit(name):
        name = name.replace("-", "_")
        if name in seen:
            return
        seen.add(name)
        out = subprocess.run(["modinfo", "-b", base, "-k", kver, "-F", "depends", name],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError("modinfo %s for kernel %s failed: %s"
                               % (name, kver, out.stderr.strip()))
        for dep in filter(None, out.stdout.strip().split(",")):
            visit(dep)
        fn = subprocess.run(["modinfo", "-b", base, "-k", kver, "-F", "filename", name],
                            capture_output=True, text=True, check=True).stdout.strip()
        if fn.startswith("(builtin)") or not fn:
            return
        order.append((name, fn))

    for n in names:
        visit(n)
    return order


def build_initramfs(kver, out_path, base="/"):
    busybox = "/bin/busybox"
    if not os.path.exists(busybox):
        raise RuntimeError("/bin/busybox missing (install busybox-static)")
    with open(busybox, "rb") as f:
        bb = f.read()
    with open(os.path.join(HERE, "initramfs-init.sh"), "rb") as f:
        init = f.read()
    mods = module_order(kver, INITRAMFS_MODULES, base)
    c = Cpio()
    for d in ("bin", "sbin", "dev", "proc", "sys", "lower", "rw", "newroot", "lib", "host",
              "lib/modules"):
        c.dir(d)
    c.chardev("dev/console", 5, 1)
    c.chardev("dev/null", 1, 3, 0o666)
    c.file("bin/busybox", bb, 0o755)
    c.symlink("bin/sh", "busybox")
    c.file("init", init, 0o755)
    order = []
    for name, path in mods:
        with open(path, "rb") as f:
            data = f.read()
        if path.endswith(".xz"):
            data = lzma.decompress(data)
        elif not path.endswith(".ko"):
            raise RuntimeError("unsupported module compression: %s" % path)
        c.file("lib/modules/%s.ko" % name, data)
        order.append(name)
    c.file("lib/modules/order", ("\n".join(order) + "\n").encode())
    with open(out_path, "wb") as f:
        f.write(c.finish())
    return order


# ---------------------------------------------------------------- temp dir hygiene

def clean_stale_tmp():
    """Removes temp dirs of earlier harness runs whose process is gone (SIGKILL)."""
    base = tempfile.gettempdir()
    for d in glob.glob(os.path.join(base, TMP_PREFIX + "*")):
        m = re.match(r"%s(\d+)-" % TMP_PREFIX, os.path.basename(d))
        if not m:
            continue
        pid = int(m.group(1))
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    continue  # owner alive
        except (OSError, IndexError):
            pass
        shutil.rmtree(d, ignore_errors=True)


def set_pdeathsig():
    """Child side of fork: QEMU dies with us even if we are SIGKILLed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass
    os.setpgrp()


# ---------------------------------------------------------------- main run

def resolve_scenario(s):
    if os.sep in s or s.endswith(".sh"):
        path = os.path.abspath(s)
        name = os.path.basename(path)
        if name.endswith(".sh"):
            name = name[:-3]
    else:
        name = s
        path = os.path.join(HERE, "scenarios", s + ".sh")
    if not os.path.isfile(path):
        raise RuntimeError("scenario %s: no such file %s" % (s, path))
    real = os.path.realpath(path)
    for hidden in ("/run/", "/dev/", "/proc/", "/sys/"):
        if real.startswith(hidden):
            raise RuntimeError("scenario %s: the guest mounts its own %s; put the script "
                               "elsewhere (e.g. the build dir)" % (real, hidden[:-1]))
    if not re.match(r"^[A-Za-z0-9_.-]+$", name):
        raise RuntimeError("scenario name %r: use [A-Za-z0-9_.-]" % name)
    check = os.path.join(os.path.dirname(path), name + ".check.py")
    return name, path, check if os.path.isfile(check) else None


def write_plan(path, scenarios, env, per_timeout):
    lines = ["# generated by vmrun.py"]
    for k, v in env.items():
        lines.append("export %s=%s" % (k, shlex.quote(v)))
    lines.append("CXVM_SCENARIO_TIMEOUT=%d" % per_timeout)
    lines.append("CXVM_PLAN=(  # name script disk-serial")
    for i, (name, script, _) in enumerate(scenarios):
        lines.append("  %s %s cxvm%d" % (shlex.quote(name), shlex.quote(script), i))
    lines.append(")")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run(args):
    t_start = time.monotonic()
    scenarios = [resolve_scenario(s) for s in args.scenarios]
    names = [s[0] for s in scenarios]
    if len(set(names)) != len(names):
        raise RuntimeError("duplicate scenario names: %s" % names)

    qemu = find_tool(["qemu-system-x86_64"], "QEMU (package qemu-system-x86)")
    kver, image, kbase = pick_kernel(args.kernel or os.environ.get("CXIOSYNC_VM_KERNEL"),
                                     args.kernel_dir or os.environ.get("CXIOSYNC_VM_KERNEL_DIR"))
    find_tool(["modinfo"], "modinfo (package kmod)")

    clean_stale_tmp()
    tmp = tempfile.mkdtemp(prefix="%s%d-" % (TMP_PREFIX, os.getpid()))
    state = {"proc": None, "tmp": tmp}
    try:
        return run_in(args, scenarios, qemu, (kver, image, kbase), tmp, state, t_start)
    finally:
        p = state["proc"]
        if p is not None and p.poll() is None:
            log("killing qemu (pid %d)" % p.pid)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        if args.keep_tmp:
            log("kept temp dir %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run_in(args, scenarios, qemu, kernel, tmp, state, t_start):
    kver, image, kbase = kernel
    boot_image = image
    if not args.no_pvh:
        boot_image = uncompressed_kernel(image) or image
    initrd = os.path.join(tmp, "initrd.cpio")
    mods = build_initramfs(kver, initrd, kbase)
    # One scratch disk per scenario, formatted here (fast) rather than in the guest.
    if len(scenarios) > 16:
        raise RuntimeError("at most 16 scenarios per boot (one virtio disk each)")
    mkfs = find_tool(["mkfs.ext4"], "mkfs.ext4 (package e2fsprogs)")
    disks = []
    for i, _ in enumerate(scenarios):
        disk = os.path.join(tmp, "scratch%d.img" % i)
        with open(disk, "wb") as f:
            f.truncate(args.disk_mb * 1024 * 1024)
        subprocess.run([mkfs, "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0",
                        disk], check=True, stdout=subprocess.DEVNULL)
        disks.append(disk)
    share = os.path.join(tmp, "share")
    os.mkdir(share)

    build_dir = os.path.abspath(args.build_dir or os.environ.get("CXIOSYNC_BUILD_DIR")
                                or os.path.join(SOURCE_DIR, "build"))
    env = {
        "CXIOSYNC_SOURCE_DIR": SOURCE_DIR,
        "CXIOSYNC_BUILD_DIR": build_dir,
        "CXVM_DIR": HERE,
        "CXVM_LIB": os.path.join(HERE, "lib.sh"),
    }
    for kv in args.env or []:
        if "=" not in kv:
            raise RuntimeError("--env wants KEY=VALUE, got %r" % kv)
        k, v = kv.split("=", 1)
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k):
            raise RuntimeError("bad env name %r" % k)
        env[k] = v
    write_plan(os.path.join(share, "plan.sh"), scenarios, env, args.scenario_timeout)

    if args.init == "systemd":
        # systemd as PID 1 (systemd-stage2.sh writes cxvm.target + cxvm-run.service, which
        # runs systemd-plan.sh). Units that only cost time in a test VM are masked.
        stage2 = os.path.join(HERE, "systemd-stage2.sh")
        append = ("console=ttyS0 panic=-1 quiet loglevel=4 cxvm.stage2=%s "
                  "systemd.unit=cxvm.target systemd.show_status=0 "
                  "systemd.log_target=console systemd.log_level=warning "
                  # TCG on a loaded host can miss the IO-APIC timer check at boot ("IO-APIC
                  # + timer doesn't work!" panic); the check is pointless in a VM.
                  "no_timer_check" % stage2)
        append += "".join(" systemd.mask=" + u for u in SYSTEMD_MASK)
    else:
        stage2 = os.path.join(HERE, "guest-init.sh")
        append = "console=ttyS0 panic=-1 quiet loglevel=4 cxvm.stage2=%s" % stage2
    root = os.path.abspath(args.root or "/")
    if root != "/":
        # Another distribution's root as the guest's / (e.g. the Debian 13 root of
        # scripts/debian13-root.sh): the host's / is shared read-only too, and initramfs-init.sh
        # bind-mounts these host paths into the overlay at the same place, so the scenarios,
        # the build tree and the kernel's modules keep their paths.
        binds = [SOURCE_DIR]
        for p in [build_dir, kbase if kbase != "/" else None] + (args.host_path or []):
            if p and os.path.exists(p) and not os.path.realpath(p).startswith(
                    os.path.realpath(root) + "/"):
                binds.append(os.path.realpath(p))
        for p in binds:
            if not re.match(r"^/[A-Za-z0-9_./+-]*$", p) or ":" in p:
                raise RuntimeError("--root: host path %r cannot go on the kernel command line" % p)
        append += " cxvm.hostbind=%s" % ",".join(binds)
    if kbase != "/":
        # initramfs-init.sh links /lib/modules/VER in the overlay to this directory, so
        # modprobe in the guest finds the modules of a kernel the host does not have.
        append += " cxvm.moddir=%s" % os.path.join(kbase, "lib", "modules", kver)
    if args.append:
        append += " " + args.append
    cmd = [qemu, "-accel", "tcg,thread=%s" % args.tcg_thread, "-smp", str(args.smp),
           "-m", str(args.mem),
           "-nodefaults", "-display", "none", "-monitor", "none", "-serial", "stdio",
           "-no-reboot", "-nic", "none",
           "-kernel", boot_image, "-initrd", initrd, "-append", append,
           "-virtfs", "local,path=%s,mount_tag=hostroot,security_model=none,"
                      "readonly=on,multidevs=remap" % root,
           "-virtfs", "local,path=%s,mount_tag=cxvm,security_model=none" % share]
    if root != "/":
        cmd += ["-virtfs", "local,path=/,mount_tag=hostfs,security_model=none,"
                           "readonly=on,multidevs=remap"]
    for i, disk in enumerate(disks):
        cmd += ["-drive", "file=%s,if=none,id=d%d,format=raw,cache=unsafe" % (disk, i),
                "-device", "virtio-blk-pci,drive=d%d,serial=cxvm%d" % (i, i)]
    log("kernel %s%s, initramfs modules: %s" % (
        kver, "" if kbase == "/" else " (from %s)" % kbase, " ".join(mods)))
    log("scenarios: %s (timeout %ds, init %s)" % (" ".join(s[0] for s in scenarios),
                                                 args.timeout, args.init))
    console_path = os.path.join(tmp, "console.log")
    console = open(console_path, "wb")
    t_boot = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, preexec_fn=set_pdeathsig)
    state["proc"] = proc

    # A guest kernel stuck this long on one CPU (the soft-lockup watchdog repeats every
    # ~28 s) will not recover: stop at once instead of at the timeout (up to 900 s of CI).
    hung = {}
    lockup = re.compile(rb"soft lockup - CPU#\d+ stuck for (\d+)s")

    def pump():
        out = sys.stdout.buffer
        for line in iter(proc.stdout.readline, b""):
            line = line.replace(b"\r", b"")
            m = lockup.search(line)
            if m and int(m.group(1)) >= HUNG_GUEST_SECONDS:
                hung.setdefault("line", line.decode("utf-8", "replace").strip())
            console.write(line)
            if args.timestamps:
                line = b"%7.2f| " % (time.monotonic() - t_boot) + line
            if not args.quiet:
                out.write(line)
                out.flush()
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()

    deadline = t_boot + args.timeout
    ready_at = None
    timed_out = False
    while True:
        if ready_at is None and os.path.exists(os.path.join(share, "ready")):
            ready_at = time.monotonic()
            log("guest ready after %.1fs" % (ready_at - t_boot))
        try:
            proc.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            pass
        if hung:
            timed_out = True
            log("FAIL: the guest kernel hung (%s); killing qemu" % hung["line"])
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        if time.monotonic() > deadline:
            timed_out = True
            log("TIMEOUT: the VM ran longer than %ds; killing qemu" % args.timeout)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
    reader.join(timeout=5)
    console.close()
    t_end = time.monotonic()

    # ------------------------------------------------------------ verdicts
    failures = 0
    summary = {"kernel": kver, "boot_seconds": None if ready_at is None
               else round(ready_at - t_boot, 2),
               "vm_seconds": round(t_end - t_boot, 2),
               "timed_out": timed_out, "scenarios": {}}
    if ready_at is None:
        log("FAIL: the guest never came up (see console output above)")
        failures += 1
    for name, path, check in scenarios:
        rdir = os.path.join(share, name)
        status_file = os.path.join(rdir, "status")
        verdict = {}
        if not os.path.exists(status_file):
            verdict["status"] = None
            verdict["error"] = "scenario did not finish (timeout or guest crash)"
        else:
            with open(status_file) as f:
                verdict["status"] = int(f.read().strip() or "-1")
            if verdict["status"] == 124:
                verdict["error"] = "scenario timed out in the guest after %ds" \
                    % args.scenario_timeout
            elif verdict["status"] != 0:
                verdict["error"] = "scenario exited with status %d" % verdict["status"]
        rj = os.path.join(rdir, "result.json")
        kv = os.path.join(rdir, "result.kv")
        if os.path.exists(kv):  # lines "KEY<TAB>JSON" from lib.sh cxvm_result
            res, n = {}, 0
            try:
                if os.path.exists(rj):
                    with open(rj) as f:
                        res = json.load(f)
                with open(kv) as f:
                    for n, line in enumerate(f, 1):
                        k, v = line.rstrip("\n").split("\t", 1)
                        res[k] = json.loads(v)
                with open(rj, "w") as f:
                    json.dump(res, f, indent=2)
            except ValueError as e:
                verdict.setdefault("error", "result.kv line %d: %s" % (n, e))
        if os.path.exists(rj):
            try:
                with open(rj) as f:
                    verdict["result"] = json.load(f)
            except ValueError as e:
                verdict.setdefault("error", "result.json is not valid JSON: %s" % e)
        if "error" not in verdict and check:
            log("host check %s" % os.path.relpath(check, SOURCE_DIR))
            r = subprocess.run([sys.executable, check, rdir])
            if r.returncode != 0:
                verdict["error"] = "host check failed (status %d)" % r.returncode
        ok = "error" not in verdict
        failures += 0 if ok else 1
        summary["scenarios"][name] = verdict
        log("%s %s%s" % ("PASS" if ok else "FAIL", name,
                         "" if ok else ": " + verdict["error"]))

    if args.results_dir:
        os.makedirs(args.results_dir, exist_ok=True)
        for name, _, _ in scenarios:
            src = os.path.join(share, name)
            dst = os.path.join(args.results_dir, name)
            if os.path.isdir(src):
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(src, dst)
        shutil.copy(console_path, os.path.join(args.results_dir, "console.log"))
        with open(os.path.join(args.results_dir, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2)
    log("boot %s, vm %.1fs, total %.1fs: %s" % (
        "%.1fs" % summary["boot_seconds"] if ready_at else "-", summary["vm_seconds"], time.monotonic() - t_start,
        "all passed" if failures == 0 else "%d failure(s)" % failures))
    return 0 if failures == 0 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    ap.add_argument("--timeout", type=int, default=300,
                    help="hard limit for the whole VM run, seconds (default 300)")
    ap.add_argument("--scenario-timeout", type=int, default=180,
                    help="limit per scenario inside the guest, seconds (default 180)")
    ap.add_argument("--build-dir", help="build tree the scenarios use "
                    "(default $CXIOSYNC_BUILD_DIR or SOURCE/build)")
    ap.add_argument("--results-dir", help="copy each scenario's result dir here")
    ap.add_argument("--env", action="append", metavar="KEY=VALUE",
                    help="export to the scenarios (repeatable)")
    ap.add_argument("--kernel", help="kernel version in /boot, or in --kernel-dir "
                    "(default: newest; $CXIOSYNC_VM_KERNEL)")
    ap.add_argument("--kernel-dir", help="a kernel unpacked outside the host's /boot: "
                    "DIR/boot/vmlinuz-VER + DIR/lib/modules/VER with modules.dep, as "
                    "scripts/fetch-kernel.sh makes it ($CXIOSYNC_VM_KERNEL_DIR)")
    ap.add_argument("--root", help="the guest's root filesystem (a directory: another "
                         "distribution's root, e.g. scripts/debian13-root.sh's); default the host's /")
    ap.add_argument("--host-path", action="append", metavar="DIR",
                    help="with --root: also bind this host directory into the guest")
    ap.add_argument("--append", help="extra kernel command line")
    ap.add_argument("--init", choices=["shell", "systemd"], default="shell",
                    help="PID 1 of the guest: shell (guest-init.sh, default) or systemd "
                         "(systemd-stage2.sh: scenarios run as a unit under systemd)")
    ap.add_argument("--smp", type=int, default=2)
    # QEMU 7.2's multi-threaded TCG loses cross-vCPU code modification: when the guest
    # patches a static branch (enabling a syscall tracepoint does, via text_poke_bp) while
    # the other vCPU runs that code, a vCPU can keep executing a stale translation and spin
    # in syscall_trace_enter forever (soft lockup, RCU stall; seen in CI and reproduced by
    # toggling the daemon's tracefs instance in a loop: hung after 20-135 s). One thread
    # running the vCPUs in turn keeps the guest SMP but serialises code modification.
    ap.add_argument("--tcg-thread", choices=["single", "multi"], default="single",
                    help="QEMU TCG threading (default single; see the comment)")
    ap.add_argument("--mem", type=int, default=1024, help="MiB")
    ap.add_argument("--disk-mb", type=int, default=1024)
    ap.add_argument("--no-pvh", action="store_true",
                    help="boot the compressed bzImage (slow) instead of the cached vmlinux")
    ap.add_argument("--timestamps", action="store_true",
                    help="prefix console lines with seconds since QEMU started")
    ap.add_argument("--quiet", action="store_true", help="do not stream the console")
    ap.add_argument("--keep-tmp", action="store_true", help="debug: keep the temp dir")
    args = ap.parse_args()

    if os.environ.get("CXIOSYNC_SKIP_VM") == "1":
        print("SKIP: CXIOSYNC_SKIP_VM=1 is set; not booting the VM for %s"
              % " ".join(args.scenarios), flush=True)
        return SKIP_CODE

    def on_signal(signum, _frame):
        raise Interrupted(signum)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        return run(args)
    except Interrupted as e:
        log("interrupted by signal %d; qemu killed, temp files removed" % e.signum)
        return 128 + e.signum
    except RuntimeError as e:
        log("FAIL: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
