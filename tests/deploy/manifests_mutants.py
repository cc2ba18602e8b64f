#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The offline manifest check must fail on broken manifests: each mutant below is a copy of
deploy/kubernetes/ with one defect, and manifests_check.py must reject it naming the defect.

    manifests_mutants.py DEPLOY_DIR CXIOSYNCD PROJECT_VERSION
"""
import contextlib
import io
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import manifests_check  # noqa: E402  (in-process: one import of the kubernetes models)

# (what, file, old text, new text, what the check must print)
MUTANTS = [
    ("a field the API type does not have", "daemonset.yaml", "      tolerations:\n", "      toleration:\n",
     ".spec.template.spec.toleration: not a field of the API type"),
    ("a field at the wrong level", "daemonset.yaml", "      hostPID: true\n", "      hostPid: true\n",
     "hostPid: not a field"),
    ("a container without a name (required)", "daemonset.yaml", "        - name: cxiosyncd\n", "        - \n",
     "deserializes into V1DaemonSet"),
    ("one more capability", "daemonset.yaml", "                - DAC_READ_SEARCH\n",
     "                - DAC_READ_SEARCH\n                - NET_ADMIN\n", "adds exactly"),
    ("privileged", "daemonset.yaml", "privileged: false", "privileged: true", "not privileged"),
    ("a mount of no volume", "daemonset.yaml", "            - name: tracefs\n              mountPath",
     "            - name: tracing\n              mountPath", "volume tracing exists"),
    ("--run-dir not the journal's mount", "daemonset.yaml", "--run-dir=/run/cxiosync", "--run-dir=/run/cxio",
     "--run-dir is the mount"),
    ("a daemon option that does not exist", "daemonset.yaml", "--unit-dropins=off", "--unit-dropins=never",
     "--check-config: status 2"),
    ("a selector the template does not match", "daemonset.yaml",
     "    matchLabels:\n      app.kubernetes.io/name: cxiosync\n",
     "    matchLabels:\n      app.kubernetes.io/name: cxiosyncd\n", "selector matches"),
    ("an invalid cxiosync.yaml", "configmap.yaml", "      /kubepods:\n        sync_isolation: off\n",
     "      /kubepods:\n        sync_isolation: sometimes\n",
     "--check-config: status 6"),
    ("a liveness probe that never fails", "daemonset.yaml", "-lt 180 ]", "-lt 180 ] || true",
     "liveness fails on a metrics.prom 200 s old"),
    ("a resource that is not there", "kustomization.yaml", "  - daemonset.yaml\n", "  - daemonset.yaml\n  - rbac.yaml\n",
     "resource rbac.yaml is a file"),
    ("an unlisted manifest", "kustomization.yaml", "  - configmap.yaml\n", "", "lists every manifest"),
    ("an image tag not the project's version", "daemonset.yaml", "localhost/cxiosync:", "localhost/cxiosync:9.",
     "image localhost/cxiosync:"),
]


def main():
    deploy, daemon, version = sys.argv[1:4]
    failed = 0
    for what, fname, old, new, want in MUTANTS:
        tmp = tempfile.mkdtemp(prefix="cxiosync-mutant.")
        try:
            d = os.path.join(tmp, "kubernetes")
            shutil.copytree(deploy, d)
            p = os.path.join(d, fname)
            text = open(p).read()
            if text.count(old) != 1:
                print(f"FAIL {what}: '{old.strip()}' is not once in {fname} (update this mutant)")
                failed += 1
                continue
            open(p, "w").write(text.replace(old, new))
            manifests_check.FAILURES.clear()
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = manifests_check.main([d, daemon, version])
            fails = [line for line in out.getvalue().splitlines() if line.startswith(("FAIL", "      "))]
            if rc != 0 and any(want in line for line in fails):
                print(f"ok   {what}: rejected ({next(line for line in fails if want in line).strip()[:110]})")
            else:
                print(f"FAIL {what}: status {rc}, no FAIL line with '{want}':")
                print("\n".join(fails) or out.getvalue()[-2000:])
                failed += 1
        finally:
            shutil.rmtree(tmp)
    print(f"{len(MUTANTS) - failed} of {len(MUTANTS)} mutants rejected")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
