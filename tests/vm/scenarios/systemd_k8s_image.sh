# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 29 items 1 and 5 (part): the OCI image of scripts/build-image.sh under Debian's podman,
# with systemd as PID 1.
# 1. `podman load` of the oci-archive, `podman run --rm IMAGE cxiosyncd --version` (timed).
# 2. The daemon as that image with the DaemonSet's arguments (read from
#    deploy/kubernetes/daemonset.yaml) and its privileges as podman spells them: host PIDs,
#    a private cgroup namespace (what containerd gives), capabilities dropped but SYS_ADMIN,
#    SYS_PTRACE and DAC_READ_SEARCH, no-new-privileges, read-only root, the host's cgroupfs
#    and tracefs at /host/..., the journal on a host directory of the guest's /run; the
#    ConfigMap's cxiosync.yaml. Timed to its "ready" line.
# 3. A container under --device-write-bps 1mb dirties; a sync from the host is boosted and
#    the container's io.max restored exactly.
#    A clean stop (podman stop: SIGTERM) leaves no record.
# 4. Again (a 2 MB/s ceiling keeps the boost up), but the daemon's container is killed with
#    SIGKILL mid-boost: the limit stays lifted; the next daemon container restores it from
#    the journal on the host path.
# The image: CXVM_IMAGE (ctest: deploy.image's archive), else build/image/*.oci.tar.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/systemd_common.inc"

MIB=${SD_K8S_MIB:-8}
command -v podman >/dev/null || cxvm_fail "podman is not installed on the host (scripts/install-deps.sh)"
IMAGE_TAR=${CXVM_IMAGE:-}
if [ -z "$IMAGE_TAR" ]; then
	for f in "$CXIOSYNC_BUILD_DIR"/image/cxiosync-image-*.oci.tar; do [ -e "$f" ] && IMAGE_TAR=$f; done
fi
[ -f "$IMAGE_TAR" ] || cxvm_fail "no image archive (ctest -R deploy.image builds build/image/cxiosync-image-VERSION.oci.tar)"
PODMAN=(podman --root /var/tmp/cxvm-podman --runroot /run/cxvm-podman --storage-driver vfs
	--cgroup-manager systemd --events-backend file)
RUN=/run/cxiosync-k8s-test
cleanup() {
	"${PODMAN[@]}" rm -f -t 0 cxvm-d1 cxvm-d2 cxvm-d3 cxvm-c1 cxvm-c2 >/dev/null 2>&1
}
trap cleanup EXIT
# No packaged daemon beside the image's (docs/kubernetes.md: not both).
systemctl stop cxiosyncd 2>/dev/null
systemctl stop cxvm-dirtier.service 2>/dev/null

# 1. Load and run.
t0=$(cxvm_now_ms)
"${PODMAN[@]}" load -q -i "$IMAGE_TAR" >"$CXVM_OUT/load.txt" 2>&1 || cxvm_fail "podman load: $(cat "$CXVM_OUT/load.txt")"
IMAGE_ID=$(python3 -c 'import json,sys,tarfile
t = tarfile.open(sys.argv[1]); idx = json.load(t.extractfile("./index.json"))
m = json.load(t.extractfile("./blobs/sha256/" + idx["manifests"][0]["digest"].split(":")[1]))
print(m["config"]["digest"].split(":")[1])' "$IMAGE_TAR")
cxvm_result load_ms $(($(cxvm_now_ms) - t0))
cxvm_time_ms t_version "${PODMAN[@]}" run --rm --network none "$IMAGE_ID" cxiosyncd --version
v=$("${PODMAN[@]}" run --rm --network none "$IMAGE_ID" cxiosyncd --version) || cxvm_fail "podman run cxiosyncd --version failed"
case $v in "cxiosyncd "*) ;; *) cxvm_fail "cxiosyncd --version in the image printed '$v'" ;; esac
cxvm_result run_version_ms "$t_version"
cxvm_log "podman run --rm IMAGE cxiosyncd --version: '$v' in $t_version ms"

# 2. The DaemonSet's container, as podman spells it.
conf=$(mktemp -d)
python3 -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["data"]["cxiosync.yaml"], end="")' \
	"$CXIOSYNC_SOURCE_DIR/deploy/kubernetes/configmap.yaml" >"$conf/cxiosync.yaml"
mapfile -t ARGS < <(python3 -c 'import sys,yaml
c = yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]
print("\n".join(c["command"] + c["args"]))' "$CXIOSYNC_SOURCE_DIR/deploy/kubernetes/daemonset.yaml")
mkdir -p "$RUN"
# start_daemon NAME: the daemon container; waits for its ready line, sets T_READY (ms).
start_daemon() {
	local t0 end
	t0=$(cxvm_now_ms)
	"${PODMAN[@]}" run -d --name "$1" --network none --pid host --cgroupns private \
		--cap-drop all --cap-add SYS_ADMIN,SYS_PTRACE,DAC_READ_SEARCH \
		--security-opt no-new-privileges --read-only \
		-v /sys/fs/cgroup:/host/sys/fs/cgroup -v /sys/kernel/tracing:/host/sys/kernel/tracing \
		-v "$RUN:/run/cxiosync" -v "$conf:/etc/cxiosync:ro" \
		"$IMAGE_ID" "${ARGS[@]}" >/dev/null || cxvm_fail "podman run of the daemon failed"
	end=$((t0 + 60000))
	until "${PODMAN[@]}" logs "$1" 2>&1 | grep -q "cxiosyncd ready"; do
		"${PODMAN[@]}" logs "$1" >"$CXVM_OUT/$1.log" 2>&1
		[ "$("${PODMAN[@]}" inspect -f '{{.State.Running}}' "$1")" = true ] ||
			cxvm_fail "the daemon container exited: $(tail -5 "$CXVM_OUT/$1.log")"
		[ "$(cxvm_now_ms)" -ge "$end" ] && cxvm_fail "no ready line in 60 s: $(tail -5 "$CXVM_OUT/$1.log")"
		sleep 0.05
	done
	T_READY=$(($(cxvm_now_ms) - t0))
}
start_daemon cxvm-d1
cxvm_result daemon_ready_ms "$T_READY"
"${PODMAN[@]}" logs cxvm-d1 >"$CXVM_OUT/cxvm-d1.log" 2>&1
cxvm_log "daemon container ready in $T_READY ms: $(grep -m1 'cxiosyncd ready' "$CXVM_OUT/cxvm-d1.log")"
grep -q "detector tracefs" "$CXVM_OUT/cxvm-d1.log" || cxvm_fail "not the tracefs detector through the hostPath: $(grep -m1 ready "$CXVM_OUT/cxvm-d1.log")"

# 3. A throttled container dirties; a sync from the host.
DEV=$CXVM_SCRATCH_DEV
WANT_LIMIT="$CXVM_SCRATCH_MAJMIN rbps=max wbps=1048576 riops=max wiops=max"
rootfs=$(mktemp -d)
mkdir -p "$rootfs/bin" "$rootfs/data" "$rootfs/tmp"
cp /bin/busybox "$rootfs/bin/busybox"
for a in sh dd sleep sync cat; do ln -s busybox "$rootfs/bin/$a"; done
tar -C "$rootfs" -c . | "${PODMAN[@]}" import --quiet - localhost/cxvm-busybox >/dev/null || cxvm_fail "podman import failed"
run_container() {
	local id end dirty
	id=$("${PODMAN[@]}" run -d --name "$1" --network none --device-write-bps "$DEV:1mb" \
		-v "$CXVM_SCRATCH_MNT:/data" localhost/cxvm-busybox \
		sh -c "dd if=/dev/zero of=/data/$1 bs=1M count=$MIB 2>/dev/null; sleep 600") || cxvm_fail "podman run $1 failed"
	CG=/sys/fs/cgroup$(systemctl show -P ControlGroup "libpod-$id.scope")
	LIMCG=$(grep -lx "$WANT_LIMIT" $(find "$CG" -name io.max) 2>/dev/null | head -1)
	LIMCG=${LIMCG%/io.max}
	[ -n "$LIMCG" ] || cxvm_fail "no '$WANT_LIMIT' under $CG"
	end=$(($(cxvm_now_ms) + 30000))
	while :; do
		dirty=$(awk '$1 == "file_dirty" || $1 == "file_writeback" { s += $2 } END { print s + 0 }' "$CG/memory.stat")
		[ "$dirty" -ge $((MIB * 1048576 * 8 / 10)) ] && break
		[ "$(cxvm_now_ms)" -ge "$end" ] && cxvm_fail "$1 never held $MIB MiB dirty ($dirty)"
		sleep 0.2
	done
}
wait_restored() {
	local end=$(($(cxvm_now_ms) + 10000))
	until [ "$(grep "^$CXVM_SCRATCH_MAJMIN " "$LIMCG/io.max")" = "$WANT_LIMIT" ]; do
		[ "$(cxvm_now_ms)" -ge "$end" ] && cxvm_fail "$1: $LIMCG io.max not restored: $(cat "$LIMCG/io.max")"
		sleep 0.1
	done
}
run_container cxvm-c1
cxvm_time_ms t_with sync
wait_restored "after the boost"
"${PODMAN[@]}" logs cxvm-d1 >"$CXVM_OUT/cxvm-d1.log" 2>&1
grep -q " boost ${LIMCG#/sys/fs/cgroup} on $CXVM_SCRATCH_MAJMIN: wbps 1048576 -> " "$CXVM_OUT/cxvm-d1.log" ||
	cxvm_fail "no boost of the container's cgroup in the daemon container's log: $(grep -E 'boost|refus' "$CXVM_OUT/cxvm-d1.log" | tail -3)"
cxvm_result sync_with_image_ms "$t_with"
[ "$t_with" -lt $((MIB * 1000 / 3)) ] || cxvm_fail "with the image's daemon the sync took $t_with ms ($MIB MiB at 1 MiB/s: ${MIB}000 ms)"
cxvm_log "the image's daemon boosted ${LIMCG#/sys/fs/cgroup}: sync $t_with ms, restored to '$WANT_LIMIT'"
"${PODMAN[@]}" rm -f -t 0 cxvm-c1 >/dev/null

# A clean stop (SIGTERM through podman) leaves nothing lifted and no record.
"${PODMAN[@]}" stop -t 30 cxvm-d1 >/dev/null || cxvm_fail "podman stop of the daemon failed"
grep -q '"cgroup"' "$RUN/boosts.json" 2>/dev/null && cxvm_fail "records left after a clean stop: $(cat "$RUN/boosts.json")"
"${PODMAN[@]}" rm -f -t 0 cxvm-d1 >/dev/null

# 4. SIGKILL mid-boost: the journal on the host path brings the next container back to it.
# A 2 MB/s ceiling keeps the boost up for seconds (8 MiB), long enough to kill it in.
mkdir -p "$conf/cxiosync.d"
printf 'cgroups:\n  /machine.slice:\n    boost_ceiling: 2M\n' >"$conf/cxiosync.d/50-ceiling.yaml"
start_daemon cxvm-d2
run_container cxvm-c2
sync &
sync_pid=$!
end=$(($(cxvm_now_ms) + 10000))
until grep -q '"cgroup"' "$RUN/boosts.json" 2>/dev/null && [ "$(grep "^$CXVM_SCRATCH_MAJMIN " "$LIMCG/io.max")" != "$WANT_LIMIT" ]; do
	kill -0 $sync_pid 2>/dev/null || cxvm_fail "the sync ended before any boost was seen"
	[ "$(cxvm_now_ms)" -ge "$end" ] && cxvm_fail "no journaled boost within 10 s: $(cat "$RUN/boosts.json" 2>&1)"
	sleep 0.02
done
"${PODMAN[@]}" kill -s KILL cxvm-d2 >/dev/null || cxvm_fail "podman kill failed"
lifted=$(grep "^$CXVM_SCRATCH_MAJMIN " "$LIMCG/io.max")
[ "$lifted" != "$WANT_LIMIT" ] || cxvm_fail "the limit was restored before the kill landed: no proof"
cxvm_log "daemon container killed with SIGKILL mid-boost; io.max '$lifted', journal: $(tr -d '\n' <"$RUN/boosts.json" | head -c 300)"
wait $sync_pid
sleep 1
[ "$(grep "^$CXVM_SCRATCH_MAJMIN " "$LIMCG/io.max")" = "$lifted" ] || cxvm_fail "io.max changed with no daemon running"
"${PODMAN[@]}" rm -f -t 0 cxvm-d2 >/dev/null
start_daemon cxvm-d3
wait_restored "after SIGKILL and a new daemon container"
"${PODMAN[@]}" logs cxvm-d3 >"$CXVM_OUT/cxvm-d3.log" 2>&1
cxvm_result restart_ready_ms "$T_READY"
cxvm_log "PASS: image under podman: --version $t_version ms, ready $T_READY ms, boost + exact restore, clean stop, restore after SIGKILL ('$lifted' -> '$WANT_LIMIT')"
