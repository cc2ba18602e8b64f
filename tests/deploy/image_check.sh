#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The OCI image (issue 29 item 1): scripts/build-image.sh from the build tree's package (its
# base cached in /var/cache/cxiosync-ci: seconds on a rerun), then
# - a second build of the same package gives the same image ID (reproducible: a node can
#   tell it has the image by its digest);
# - podman has it as localhost/cxiosync:VERSION with the documented configuration (CMD
#   cxiosyncd --bus=none --foreground, no ENTRYPOINT, the version label);
# - the image's own root (unpacked from the OCI archive, run with chroot: no host library
#   leaks in) runs cxiosyncd --version, cxiosyncctl --help and `cxiosyncd --check-config` on
#   the ConfigMap's file, and has what the DaemonSet uses: the command, /bin/sh, stat and date
#   of the liveness probe, no docs or systemd units;
# - size and start time are printed (not asserted: CI machines differ).
#   image_check.sh SOURCE_DIR BUILD_DIR DEB
# shellcheck disable=SC2015  # "check && ok || bad": ok only echoes, it never fails
set -euo pipefail
src=$1 build=$2 deb=$3
out=$build/image
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" && fail=1; }

bash "$src/scripts/build-image.sh" --deb "$deb" --out "$out" | tee "$build/image.log"
version=$(dpkg-deb -f "$deb" Version)
archive=$out/cxiosync-image-$version.oci.tar
id1=$(podman image inspect --format '{{.Id}}' "localhost/cxiosync:$version")
bash "$src/scripts/build-image.sh" --deb "$deb" --out "$out" --no-load >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xf "$archive"
index_manifest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"].split(":")[1])' "$tmp/index.json")
config=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["digest"].split(":")[1])' "$tmp/blobs/sha256/$index_manifest")
[ "$config" = "$id1" ] && ok "rebuilt from the same package: the same image ID ${id1:0:12}" ||
	bad "rebuild gave image $config, podman has $id1"

podman image exists "localhost/cxiosync:$version" && ok "podman has localhost/cxiosync:$version" ||
	bad "podman has no localhost/cxiosync:$version"
cmd=$(podman image inspect --format '{{json .Config.Cmd}} {{json .Config.Entrypoint}}' "localhost/cxiosync:$version")
[ "$cmd" = '["cxiosyncd","--bus=none","--foreground"] null' ] && ok "CMD cxiosyncd --bus=none --foreground, no ENTRYPOINT" ||
	bad "configuration: $cmd"
label=$(podman image inspect --format '{{index .Config.Labels "org.opencontainers.image.version"}}' "localhost/cxiosync:$version")
[ "$label" = "$version" ] && ok "version label $version" || bad "version label '$label'"

# The image's root from its one layer.
layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0]["digest"].split(":")[1])' "$tmp/blobs/sha256/$index_manifest")
root=$tmp/root
mkdir "$root"
tar -C "$root" -xzf "$tmp/blobs/sha256/$layer"
for f in usr/sbin/cxiosyncd usr/bin/cxiosyncctl bin/sh usr/local/bin/stat usr/local/bin/date var/lib/dpkg/status; do
	[ -e "$root/$f" ] || [ -L "$root/$f" ] && ok "image has /$f" || bad "image lacks /$f"
done
for f in usr/share/doc usr/share/man lib/systemd usr/lib/x86_64-linux-gnu/gconv; do
	[ ! -e "$root/$f" ] && ok "image has no /$f" || bad "image still has /$f"
done
grep -q '^Package: cxiosync$' "$root/var/lib/dpkg/status" && grep -q '^Package: libc6$' "$root/var/lib/dpkg/status" &&
	ok "dpkg status names cxiosync and libc6 (image scanners)" || bad "dpkg status incomplete"
v=$(chroot "$root" cxiosyncd --version 2>&1) && [ "$v" = "cxiosyncd $version" ] &&
	ok "chroot: cxiosyncd --version on the image's own libraries" || bad "cxiosyncd --version in the image: $v"
chroot "$root" cxiosyncctl --help >/dev/null 2>&1 && ok "chroot: cxiosyncctl --help" || bad "cxiosyncctl --help in the image"
mkdir -p "$root/etc/cxiosync-test"
python3 -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["data"]["cxiosync.yaml"], end="")' \
	"$src/deploy/kubernetes/configmap.yaml" >"$root/etc/cxiosync-test/cxiosync.yaml"
chroot "$root" cxiosyncd --config=/etc/cxiosync-test --check-config >/dev/null &&
	ok "chroot: the image's daemon accepts the ConfigMap's cxiosync.yaml" || bad "ConfigMap config refused in the image"
touch "$root/run/cxiosync/metrics.prom"
probe=$(python3 -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["exec"]["command"][2])' \
	"$src/deploy/kubernetes/daemonset.yaml")
chroot "$root" /bin/sh -c "$probe" && ok "chroot: the liveness command runs in the image (fresh metrics.prom)" ||
	bad "the liveness command fails in the image"
touch -d '-10 min' "$root/run/cxiosync/metrics.prom"
! chroot "$root" /bin/sh -c "$probe" && ok "chroot: ... and fails on a stale one" || bad "liveness passes on a stale metrics.prom"

t0=$(date +%s%N)
for _ in 1 2 3 4 5; do chroot "$root" cxiosyncd --version >/dev/null; done
t1=$(date +%s%N)
size=$(podman image inspect --format '{{.Size}}' "localhost/cxiosync:$version")
layer_bytes=$(stat -c %s "$tmp/blobs/sha256/$layer")
echo "image: localhost/cxiosync:$version ${id1:0:12}, $size bytes unpacked, $layer_bytes bytes compressed;" \
	"exec of cxiosyncd --version in its root $(((t1 - t0) / 5000000)) ms"
exit $fail
