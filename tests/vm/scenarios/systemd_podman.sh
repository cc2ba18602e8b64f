# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 18 item 6, container users: Debian's podman (systemd cgroup manager) runs a container
# started with `--device-write-bps DISK:1mb` that dirties MIB MiB on the scratch disk; a
# `sync` from outside the container waits for the throttled writeback without cxiosyncd and
# not with it; the container's io.max (set by the OCI runtime on its libpod-ID.scope) is
# exactly what it was afterwards; `cxiosyncctl show libpod-ID.scope` resolves the scope
# through systemd. The image is made here from busybox-static (no registry).
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/systemd_common.inc"

MIB=${SD_PODMAN_MIB:-8}
command -v podman >/dev/null || cxvm_fail "podman is not installed on the host (scripts/install-deps.sh)"
# Storage in the guest's throwaway overlay; vfs: overlay-on-overlay needs fuse-overlayfs.
PODMAN=(podman --root /var/tmp/cxvm-podman --runroot /run/cxvm-podman --storage-driver vfs
	--cgroup-manager systemd --events-backend file)
cleanup() {
	"${PODMAN[@]}" rm -f -t 0 cxvm-c1 cxvm-c2 >/dev/null 2>&1
	systemctl is-active --quiet cxiosyncd || systemctl start cxiosyncd
}
trap cleanup EXIT

sd_install_deb
systemctl is-active --quiet cxiosyncd || systemctl start cxiosyncd || cxvm_fail "cannot start cxiosyncd"
systemctl stop cxvm-dirtier.service 2>/dev/null

# The image: busybox-static as /bin/busybox plus the applets the container runs.
rootfs=$(mktemp -d)
mkdir -p "$rootfs/bin" "$rootfs/data" "$rootfs/tmp"
cp /bin/busybox "$rootfs/bin/busybox"
for a in sh dd sleep sync cat; do ln -s busybox "$rootfs/bin/$a"; done
tar -C "$rootfs" -c . | "${PODMAN[@]}" import --quiet - localhost/cxvm-busybox >/dev/null ||
	cxvm_fail "podman import failed"
DEV=$CXVM_SCRATCH_DEV
WANT_LIMIT="$CXVM_SCRATCH_MAJMIN rbps=max wbps=1048576 riops=max wiops=max"

# run_container NAME: a container limited to 1 MiB/s writes on the scratch disk that dirties
# MIB MiB and stays; sets CG (its cgroup dir) and SCOPE (its scope unit).
run_container() {
	local id
	id=$("${PODMAN[@]}" run -d --name "$1" --network none --device-write-bps "$DEV:1mb" \
		-v "$CXVM_SCRATCH_MNT:/data" localhost/cxvm-busybox \
		sh -c "dd if=/dev/zero of=/data/$1 bs=1M count=$MIB 2>/dev/null; sleep 600") ||
		cxvm_fail "podman run $1 failed"
	SCOPE=libpod-$id.scope
	CG=/sys/fs/cgroup$(systemctl show -P ControlGroup "$SCOPE")
	[ -d "$CG" ] || cxvm_fail "no cgroup for $SCOPE"
	# The OCI runtime writes the limit on the scope or on a cgroup below it (crun: container/).
	LIMCG=$(grep -lx "$WANT_LIMIT" $(find "$CG" -name io.max) 2>/dev/null | head -1)
	LIMCG=${LIMCG%/io.max}
	[ -n "$LIMCG" ] || cxvm_fail "no '$WANT_LIMIT' under $CG: $(find "$CG" -name io.max -exec grep -H . {} +; cat "$CG/cgroup.subtree_control" /sys/fs/cgroup/machine.slice/cgroup.subtree_control)"
	cxvm_log "the container's limit is in ${LIMCG#/sys/fs/cgroup}/io.max"
	local end=$(($(cxvm_now_ms) + 30000)) dirty=0
	while :; do
		dirty=$(awk '$1 == "file_dirty" || $1 == "file_writeback" { s += $2 } END { print s + 0 }' "$CG/memory.stat")
		[ "$dirty" -ge $((MIB * 1048576 * 8 / 10)) ] && break
		[ "$(cxvm_now_ms)" -ge "$end" ] && cxvm_fail "$SCOPE never held $MIB MiB dirty ($dirty)"
		sleep 0.2
	done
}

# 1. Without cxiosyncd: the outside sync waits for the container's throttled writeback.
systemctl stop cxiosyncd
run_container cxvm-c1
cxvm_time_ms t_without sync
cxvm_log "without cxiosyncd: sync from outside the container took $t_without ms ($MIB MiB at 1 MiB/s)"
"${PODMAN[@]}" rm -f -t 0 cxvm-c1 >/dev/null

# 2. With cxiosyncd: fast, and the container's limit is restored exactly.
systemctl start cxiosyncd || cxvm_fail "cannot start cxiosyncd"
run_container cxvm-c2
shown=$(cxiosyncctl --json=short show "$SCOPE" | jq -r .cgroup) || cxvm_fail "cxiosyncctl show $SCOPE failed"
[ "/sys/fs/cgroup$shown" = "$CG" ] || cxvm_fail "cxiosyncctl show $SCOPE is '$shown', not '${CG#/sys/fs/cgroup}'"
cxvm_time_ms t_with sync
cxvm_log "with cxiosyncd: sync from outside the container took $t_with ms"
end=$(($(cxvm_now_ms) + 10000))
until [ "$(grep "^$CXVM_SCRATCH_MAJMIN " "$LIMCG/io.max")" = "$WANT_LIMIT" ]; do
	[ "$(cxvm_now_ms)" -ge "$end" ] && cxvm_fail "$LIMCG io.max not restored: $(cat "$LIMCG/io.max")"
	sleep 0.1
done
journalctl -q -u cxiosyncd -o cat >"$CXVM_OUT/cxiosyncd.journal"
grep -q "^boost ${LIMCG#/sys/fs/cgroup} on $CXVM_SCRATCH_MAJMIN: wbps 1048576 -> " "$CXVM_OUT/cxiosyncd.journal" ||
	cxvm_fail "no boost of the container's cgroup in cxiosyncd's journal: $(grep -E 'boost|lift' "$CXVM_OUT/cxiosyncd.journal" | tail -3)"
cxvm_result sync_without_ms "$t_without"
cxvm_result sync_with_ms "$t_with"
[ "$t_with" -lt $((t_without / 3)) ] ||
	cxvm_fail "with cxiosyncd the sync took $t_with ms, not under a third of $t_without ms"
cxvm_log "PASS: podman --device-write-bps: sync $t_without ms without, $t_with ms with cxiosyncd; ${LIMCG#/sys/fs/cgroup} restored to '$WANT_LIMIT'"
