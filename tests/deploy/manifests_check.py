#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Offline check of deploy/kubernetes/ (issue 29 item 2) against the Kubernetes API types.

    manifests_check.py DEPLOY_DIR CXIOSYNCD PROJECT_VERSION

No cluster, no kubectl, no kustomize (not in Debian): Debian's python3-kubernetes models.

1. kustomization.yaml: every resource exists once, every manifest in the directory is listed,
   every namespaced object is in the kustomization's namespace, and that Namespace is there.
2. Each object is deserialized into its typed model (kubernetes.client.ApiClient.deserialize,
   the client's own path for API responses): required fields are enforced by the models'
   client-side validation, and the object serialized back must equal the input, so a field the
   API type does not have (a typo, a wrong level) is named instead of silently dropped.
3. What the API server would refuse: selector vs template labels, volume and mount names,
   references to the ConfigMap and ServiceAccount, enum values the models leave open.
4. The DaemonSet's privileges are exactly the documented ones (docs/kubernetes.md): a new
   capability, hostPath or host namespace fails here until this list and the docs say why.
5. The daemon itself: the container's arguments with the ConfigMap's cxiosync.yaml go through
   `cxiosyncd ARGS --check-config` (every option parsed, the configuration valid), and the
   liveness command passes on a fresh metrics.prom and fails on a stale or missing one.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml
from kubernetes import client

FAILURES = []


def check(cond, what):
    if cond:
        print(f"ok   {what}")
    else:
        print(f"FAIL {what}")
        FAILURES.append(what)
    return cond


# kind -> (apiVersion, model, namespaced)
KINDS = {
    "Namespace": ("v1", "V1Namespace", False),
    "ServiceAccount": ("v1", "V1ServiceAccount", True),
    "ConfigMap": ("v1", "V1ConfigMap", True),
    "DaemonSet": ("apps/v1", "V1DaemonSet", True),
}

# The DaemonSet's privileges, each for the reason daemonset.yaml's comments give.
WANT_CAPS = {"SYS_ADMIN", "SYS_PTRACE", "DAC_READ_SEARCH"}
WANT_HOST_PATHS = {
    "/sys/fs/cgroup": "Directory",
    "/sys/kernel/tracing": "Directory",
    "/run/cxiosync": "DirectoryOrCreate",
}
# Linux capability names as Kubernetes spells them (capabilities(7) without CAP_).
LINUX_CAPS = set(
    "CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP "
    "LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER "
    "SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE "
    "SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP "
    "MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF "
    "CHECKPOINT_RESTORE ALL".split())
HOST_PATH_TYPES = {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
                   "CharDevice", "BlockDevice"}


class FakeResponse:
    """What ApiClient.deserialize reads: the body of an API response."""

    def __init__(self, obj):
        self.data = json.dumps(obj)


def diff(a, b, path=""):
    """Paths where the round trip through the model lost or changed something."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in b:
                out.append(f"{path}.{k}: not a field of the API type")
            elif k not in a:
                out.append(f"{path}.{k}: added by the model")
            else:
                out += diff(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} became {b!r}"]


def load_typed(api, path):
    """Every document of PATH as (dict, typed model)."""
    out = []
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for i, doc in enumerate(docs):
        name = f"{os.path.basename(path)}#{i} {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        kind = doc.get("kind")
        if not check(kind in KINDS, f"{name}: kind is one this check knows ({', '.join(KINDS)})"):
            continue
        api_version, model, _ = KINDS[kind]
        check(doc.get("apiVersion") == api_version, f"{name}: apiVersion {api_version}")
        try:
            obj = api.deserialize(FakeResponse(doc), model)
        except ValueError as e:  # a required field missing, a wrong type
            check(False, f"{name}: deserializes into {model}: {e}")
            continue
        lost = diff(doc, api.sanitize_for_serialization(obj))
        check(not lost, f"{name}: {model} round trip keeps every field" +
              "".join(f"\n       {d}" for d in lost))
        out.append((name, doc, obj))
    return out


def check_kustomization(deploy, api):
    with open(os.path.join(deploy, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    check(k.get("apiVersion") == "kustomize.config.k8s.io/v1beta1" and k.get("kind") == "Kustomization",
          "kustomization.yaml: kustomize.config.k8s.io/v1beta1 Kustomization")
    known = {"apiVersion", "kind", "namespace", "resources", "images", "labels", "commonLabels",
             "configMapGenerator", "patches"}
    check(set(k) <= known, f"kustomization.yaml: only known keys ({sorted(set(k) - known)} unknown)")
    res = k.get("resources", [])
    check(len(res) == len(set(res)), "kustomization.yaml: no resource listed twice")
    for r in res:
        check(os.path.isfile(os.path.join(deploy, r)) and "/" not in r,
              f"kustomization.yaml: resource {r} is a file of {deploy}")
    manifests = sorted(f for f in os.listdir(deploy) if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml")
    check(sorted(res) == manifests, f"kustomization.yaml lists every manifest ({manifests})")
    objects = []
    for r in res:
        if os.path.isfile(os.path.join(deploy, r)):
            objects += load_typed(api, os.path.join(deploy, r))
    ns = k.get("namespace")
    check(any(d["kind"] == "Namespace" and d["metadata"]["name"] == ns for _, d, _ in objects),
          f"the kustomization's namespace {ns} is one of its resources")
    for name, d, _ in objects:
        if KINDS[d["kind"]][2]:
            check(d["metadata"].get("namespace") == ns, f"{name}: in namespace {ns}")
    keys = [(d["kind"], d["metadata"]["name"]) for _, d, _ in objects]
    check(len(keys) == len(set(keys)), "no two objects with the same kind and name")
    return objects


def only(objects, kind):
    found = [(d, o) for _, d, o in objects if d["kind"] == kind]
    check(len(found) == 1, f"exactly one {kind}")
    return found[0] if found else (None, None)


def check_api_rules(ds, objects):
    """What the API server's validation or admission would refuse."""
    spec, pod = ds.spec, ds.spec.template.spec
    sel = spec.selector.match_labels or {}
    tmpl = ds.spec.template.metadata.labels or {}
    check(sel and all(tmpl.get(k) == v for k, v in sel.items()), "selector matches the template's labels")
    check(spec.update_strategy.type in ("RollingUpdate", "OnDelete"), "updateStrategy type")
    check(len(pod.containers) == 1, "one container")
    c = pod.containers[0]
    check(c.image_pull_policy in ("Always", "IfNotPresent", "Never"), "imagePullPolicy value")
    vols = {v.name: v for v in pod.volumes}
    check(len(vols) == len(pod.volumes), "volume names unique")
    paths = [m.mount_path for m in c.volume_mounts]
    check(len(paths) == len(set(paths)), "mount paths unique")
    for m in c.volume_mounts:
        check(m.name in vols, f"mount {m.mount_path}: volume {m.name} exists")
    for v in pod.volumes:
        check(sum(x is not None for x in (v.host_path, v.config_map, v.empty_dir, v.secret)) == 1,
              f"volume {v.name}: one source")
        if v.host_path:
            check((v.host_path.type or "") in HOST_PATH_TYPES, f"volume {v.name}: hostPath type {v.host_path.type}")
        if v.config_map:
            check(any(d["kind"] == "ConfigMap" and d["metadata"]["name"] == v.config_map.name for _, d, _ in objects),
                  f"volume {v.name}: ConfigMap {v.config_map.name} is in the kustomization")
    check(any(d["kind"] == "ServiceAccount" and d["metadata"]["name"] == pod.service_account_name for _, d, _ in objects),
          f"serviceAccountName {pod.service_account_name} is in the kustomization")
    for t in pod.tolerations or []:
        check(t.operator in ("Exists", "Equal", None) and t.effect in (None, "NoSchedule", "PreferNoSchedule", "NoExecute"),
              f"toleration {t.operator} {t.effect}: valid values")
        check(t.operator != "Exists" or not t.value, "a toleration with Exists has no value")
    sc = c.security_context
    caps = set(sc.capabilities.add or []) | set(sc.capabilities.drop or [])
    check(caps <= LINUX_CAPS, f"capability names are Linux's ({sorted(caps - LINUX_CAPS)})")
    check(sc.seccomp_profile.type in ("RuntimeDefault", "Localhost", "Unconfined"), "seccompProfile type")
    probe = c.liveness_probe
    check(sum(x is not None for x in (probe._exec, probe.http_get, probe.tcp_socket)) == 1,
          "liveness probe: one handler")
    for k, v in (ds.spec.template.metadata.annotations or {}).items():
        if k.startswith("container.apparmor.security.beta.kubernetes.io/"):
            check(k.split("/", 1)[1] in {x.name for x in pod.containers},
                  f"AppArmor annotation {k} names a container")
            check(v in ("runtime/default", "unconfined") or v.startswith("localhost/"), f"AppArmor profile {v}")


def arg_value(args, opt):
    vals = [a.split("=", 1)[1] for a in args if a.startswith(opt + "=")]
    return vals[0] if len(vals) == 1 else None


def check_privileges(ds, version):
    """The least privilege that works, exactly (daemonset.yaml says why for each)."""
    pod = ds.spec.template.spec
    c = pod.containers[0]
    sc = c.security_context
    check(pod.host_pid is True, "hostPID (the syncers are the node's processes)")
    check(not pod.host_network and not pod.host_ipc, "no hostNetwork, no hostIPC")
    check(pod.automount_service_account_token is False, "no API token mounted")
    check(pod.priority_class_name == "system-node-critical", "priorityClassName system-node-critical")
    check(any(t.operator == "Exists" and t.key is None and t.effect is None for t in pod.tolerations or []),
          "tolerates every taint (operator Exists, no key, no effect)")
    check(sc.privileged is False, "not privileged")
    check(sc.allow_privilege_escalation is False, "allowPrivilegeEscalation false (no_new_privs)")
    check(sc.read_only_root_filesystem is True, "read-only root filesystem")
    check(sc.run_as_user == 0, "runs as uid 0 (io.max, tracefs, /proc files are root's)")
    check(sc.capabilities.drop == ["ALL"], "drops ALL capabilities")
    check(set(sc.capabilities.add) == WANT_CAPS and len(sc.capabilities.add) == len(WANT_CAPS),
          f"adds exactly {sorted(WANT_CAPS)}")
    check(sc.seccomp_profile.type == "RuntimeDefault", "seccomp RuntimeDefault")
    ann = ds.spec.template.metadata.annotations or {}
    check(ann.get(f"container.apparmor.security.beta.kubernetes.io/{c.name}") == "unconfined",
          "AppArmor unconfined for the daemon (ptrace of other profiles' processes)")
    host = {v.host_path.path: v for v in pod.volumes if v.host_path}
    check({p: v.host_path.type for p, v in host.items()} == WANT_HOST_PATHS,
          f"hostPath volumes are exactly {WANT_HOST_PATHS}")
    check(c.resources.limits.get("cpu") is None, "no CPU limit (a throttled daemon helps no one)")
    check(c.image == f"localhost/cxiosync:{version}",
          f"image localhost/cxiosync:{version} (scripts/build-image.sh's name, the project's version)")

    # The daemon's directories are the mounts of the right volumes.
    mounts = {m.name: m for m in c.volume_mounts}
    by_path = {v.host_path.path: v.name for v in pod.volumes if v.host_path}
    cm = [v.name for v in pod.volumes if v.config_map]
    args = c.args
    want = {"--cgroup-root": by_path.get("/sys/fs/cgroup"), "--tracefs-root": by_path.get("/sys/kernel/tracing"),
            "--run-dir": by_path.get("/run/cxiosync"), "--config": cm[0] if cm else None}
    for opt, vol in want.items():
        m = mounts.get(vol)
        check(m is not None and arg_value(args, opt) == m.mount_path, f"{opt} is the mount of volume {vol}")
        if m is not None:
            check(bool(m.read_only) == (opt == "--config"), f"volume {vol}: read-only only for the config")
    check(arg_value(args, "--bus") == "none", "--bus=none (no D-Bus API in the pod)")
    check(arg_value(args, "--cgroupns") == "/proc/1/ns/cgroup", "--cgroupns=/proc/1/ns/cgroup (the host's)")
    check(c.command == ["cxiosyncd"], "command cxiosyncd (the image's CMD program)")
    probe = " ".join(c.liveness_probe._exec.command)
    run_dir = arg_value(args, "--run-dir") or ""
    check(f"{run_dir}/metrics.prom" in probe, "liveness reads metrics.prom of --run-dir")


def check_with_daemon(ds, cm, daemon):
    c = ds.spec.template.spec.containers[0]
    tmp = tempfile.mkdtemp(prefix="cxiosync-manifests.")
    try:
        conf = os.path.join(tmp, "etc")
        os.mkdir(conf)
        for key, text in (cm.data or {}).items():
            with open(os.path.join(conf, key), "w") as f:
                f.write(text)
        check(set(cm.data or {}) == {"cxiosync.yaml"}, "ConfigMap holds cxiosync.yaml only")
        args = [a for a in c.args if not a.startswith("--config=")] + [f"--config={conf}", "--check-config"]
        r = subprocess.run([daemon] + args, capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, f"cxiosyncd {' '.join(c.args)} --check-config: status {r.returncode}"
              f" {r.stdout.strip()} {r.stderr.strip()}")

        # The liveness command, as the image's busybox sh runs it, against a scratch run dir.
        cmd = list(c.liveness_probe._exec.command)
        run_dir = arg_value(c.args, "--run-dir")
        cmd[-1] = cmd[-1].replace(f"{run_dir}/", f"{tmp}/")
        shell = [shutil.which("busybox"), "sh"] if shutil.which("busybox") else ["/bin/sh"]
        check(cmd[0] == "/bin/sh" and cmd[1] == "-c", "liveness runs /bin/sh -c (busybox in the image)")
        metrics = os.path.join(tmp, "metrics.prom")

        def probe():
            return subprocess.run(shell + cmd[1:], capture_output=True, timeout=10).returncode

        check(probe() != 0, "liveness fails without metrics.prom")
        with open(metrics, "w") as f:
            f.write("# EOF\n")
        check(probe() == 0, "liveness passes on a fresh metrics.prom")
        old = time.time() - 200
        os.utime(metrics, (old, old))
        check(probe() != 0, "liveness fails on a metrics.prom 200 s old")
        old = time.time() - 100
        os.utime(metrics, (old, old))
        check(probe() == 0, "liveness passes on one 100 s old (idle refresh is 60 s)")
    finally:
        shutil.rmtree(tmp)


def main(argv):
    deploy, daemon, version = argv
    api = client.ApiClient()
    objects = check_kustomization(deploy, api)
    ds_doc, ds = only(objects, "DaemonSet")
    _, cm = only(objects, "ConfigMap")
    if ds is not None:
        sections = [check_api_rules, check_privileges] + ([check_with_daemon] if cm is not None else [])
        args = {check_api_rules: (ds, objects), check_privileges: (ds, version), check_with_daemon: (ds, cm, daemon)}
        for section in sections:
            try:
                section(*args[section])
            except (AttributeError, TypeError, KeyError, IndexError) as e:  # a field missing
                check(False, f"{section.__name__}: the DaemonSet lacks what it reads ({type(e).__name__}: {e})")
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:4]))
