# SPDX-License-Identifier: GPL-2.0-or-later
# Sync isolation across a device stack (issue 7 item 5): cg1 writes into ext4 on a loop
# device whose backing file lives on the scratch disk. cg1 is limited on BOTH layers (the
# loop device, and the scratch disk that carries the loop's re-issued direct I/O, charged
# to cg1 since 5.14). A syncfs of the loop filesystem from cg2 must be helped on both
# layers: the daemon follows loop -> backing and boosts each limited layer, then restores
# both lines exactly. Vanilla (no daemon) is throttled.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"

MIB=${CXD_DIRTY_MIB:-8}
LIMIT="wbps=1048576"
modprobe loop 2>/dev/null
img=$CXVM_SCRATCH_MNT/stack.img
mnt=/mnt/cxiosync-stack
truncate -s 256M "$img"
loopdev=$(losetup --find --show --direct-io=on "$img") || cxvm_fail "losetup"
trap 'umount "$mnt" 2>/dev/null; losetup -d "$loopdev" 2>/dev/null; cxd_cleanup' EXIT
mkfs.ext4 -q -F "$loopdev" || cxvm_fail "mkfs on $loopdev"
mkdir -p "$mnt"
mount "$loopdev" "$mnt" || cxvm_fail "mount $loopdev"
loop_majmin=$(cat "/sys/block/$(basename "$loopdev")/dev")
cxvm_log "loop $loopdev ($loop_majmin, dio=$(cat "/sys/block/$(basename "$loopdev")/loop/dio")) on $CXVM_SCRATCH_MAJMIN"

cxvm_cgroup_setup
cxvm_cg_create cg1 cg2
cxvm_io_max cg1 "$LIMIT" "$loop_majmin"
cxvm_io_max cg1 "$LIMIT"
io_max_file=$(cxvm_cg_path cg1)/io.max
orig=$(cat "$io_max_file")
cxvm_log "cg1 io.max: $(echo "$orig" | tr '\n' ';')"

dirty_stack() {
	cxvm_cg_run cg1 dd if=/dev/zero of="$mnt/$1" bs=1M count="$MIB" status=none ||
		cxvm_fail "dd into $mnt/$1"
	cxvm_wait_dirty cg1 $((MIB * 1048576 * 9 / 10)) 10 || cxvm_fail "cg1 never showed $MIB MiB dirty"
}

# 1. Vanilla: limits on both layers, no daemon.
dirty_stack vanilla
cxvm_time_ms t_vanilla cxvm_cg_run cg2 sync -f "$mnt" || cxvm_fail "syncfs from cg2"
cxvm_log "limits on loop + disk, no daemon: syncfs took ${t_vanilla} ms"

# 2. The same with cxiosyncd.
cxd_start
dirty_stack daemon
cxvm_time_ms t_daemon cxvm_cg_run cg2 sync -f "$mnt" || cxvm_fail "syncfs from cg2"
cxvm_log "limits on loop + disk, cxiosyncd: syncfs took ${t_daemon} ms"
end=$(($(cxvm_now_ms) + 5000))
while [ "$(cat "$io_max_file")" != "$orig" ] && [ "$(cxvm_now_ms)" -lt "$end" ]; do sleep 0.05; done
after=$(cat "$io_max_file")
grep -E 'action=(boost|restore) ' "$CXD_LOG" | head -6
boost_loop=$(grep -E 'action=boost ' "$CXD_LOG" | grep -c "device=$loop_majmin ")
boost_disk=$(grep -E 'action=boost ' "$CXD_LOG" | grep -c "device=$CXVM_SCRATCH_MAJMIN ")
cxd_stop

cxvm_result dirty_mib "$MIB"
cxvm_result sync_ms_vanilla "$t_vanilla"
cxvm_result sync_ms_with_daemon "$t_daemon"
cxvm_result boosts_on_loop "$boost_loop"
cxvm_result boosts_on_backing_disk "$boost_disk"
cxvm_result_str io_max_original "$(echo "$orig" | tr '\n' ';')"
cxvm_result_str io_max_after "$(echo "$after" | tr '\n' ';')"

[ "$after" = "$orig" ] || cxvm_fail "cg1 io.max not restored exactly: '$after' != '$orig'"
[ "$boost_loop" -ge 1 ] || cxvm_fail "the loop layer ($loop_majmin) was not boosted"
[ "$boost_disk" -ge 1 ] || cxvm_fail "the backing layer ($CXVM_SCRATCH_MAJMIN) was not boosted"
[ $((t_daemon * 3)) -lt "$t_vanilla" ] ||
	cxvm_fail "with cxiosyncd ${t_daemon} ms is not much faster than vanilla ${t_vanilla} ms"
cxvm_log "ok: vanilla ${t_vanilla} ms, cxiosyncd ${t_daemon} ms, both layers boosted and restored"
