# SPDX-License-Identifier: GPL-2.0-or-later
# Captures real kernel text for the parser tests (tests/fixtures/kernel-X.Y/).
# Run through tests/vm/capture-fixtures.sh, which copies $CXVM_OUT/files/ into the tree.
# The centre piece is an inverted sync: cg1 (wbps=1MiB/s) dirties 4 MiB, cg2 syncs;
# while cg2's sync is blocked we read its /proc files, PSI and the tracefs instance.
. "$CXVM_LIB"
cg=/sys/fs/cgroup
dev=$CXVM_SCRATCH_MAJMIN
mnt=$CXVM_SCRATCH_MNT
meta() { cxvm_result "$1" "$2"; }
meta_str() { cxvm_result_str "$1" "$2"; }

meta_str kernel "$(uname -r)"
meta_str kernel_version "$(cat /proc/version)"
meta_str scratch_majmin "$dev"

cxvm_cgroup_setup
cxvm_cg_create cg1 cg2 cg3
cxvm_save $cg/cgroup.controllers root-cgroup.controllers
cxvm_save $cg/cgroup.subtree_control root-cgroup.subtree_control

# --- io.max: empty, one key set, several keys, two devices
cxvm_save $cg/cg2/io.max io.max-empty
cxvm_io_max cg1 "wbps=1048576"
cxvm_save $cg/cg1/io.max io.max
cxvm_io_max cg3 "rbps=2097152 wbps=1048576 riops=100 wiops=50"
cxvm_save $cg/cg3/io.max io.max-all-keys
modprobe null_blk nr_devices=1 gb=1 || cxvm_fail "modprobe null_blk"
for _ in $(seq 50); do [ -e /sys/block/nullb0/dev ] && break; sleep 0.1; done
nullb=$(cat /sys/block/nullb0/dev)
meta_str nullb0_majmin "$nullb"
# A limit on a second device creates cg1's blkg for it: io.stat then lists nullb0 with
# no I/O, which the kernel prints as "MAJ:MIN " with no keys.
cxvm_io_max cg1 "riops=1000" "$nullb"
cxvm_save $cg/cg1/io.max io.max-two-devices

cxvm_log "io.max done"
# --- tracefs: private instance with the sync family and writeback_queue
T=/sys/kernel/tracing/instances/cxfix
mkdir "$T" || cxvm_fail "tracefs instance"
for e in syscalls/sys_enter_sync syscalls/sys_exit_sync syscalls/sys_enter_syncfs \
	syscalls/sys_exit_syncfs writeback/writeback_queue; do
	echo 1 >"$T/events/$e/enable" || cxvm_fail "enable $e"
	cxvm_save "$T/events/$e/format" "tracefs/format-${e#*/}"
done
echo 1 >"$T/tracing_on"

# --- the inverted sync
cxvm_log "tracing on"
cxvm_save $cg/cg1/memory.stat memory.stat-idle
cxvm_dirty cg1 "$mnt/dirty-cg1" 8
cxvm_wait_dirty cg1 $((3 * 1024 * 1024)) 5 || cxvm_log "memory.stat did not show 3 MiB dirty within 5 s"
cxvm_log "dirtied"
cxvm_save $cg/cg1/memory.stat memory.stat
cxvm_save $cg/cg1/cgroup.events cgroup.events-unpopulated
cxvm_cg_spawn cg1 sleep 600
sleeper=$!
sleep 0.2
cxvm_save $cg/cg1/cgroup.events cgroup.events
cxvm_save $cg/cg1/cgroup.procs cgroup.procs

cxvm_cg_spawn cg2 sync
syncer=$!
t0=$(cxvm_now_ms)
# Wait until the sync blocks (state D), then snapshot at once (builtins only).
state=
for _ in $(seq 100); do
	read -r _ _ state _ </proc/$syncer/stat
	[ "$state" = D ] && break
	sleep 0.05
done
sleep 0.3
state_before=$state
for f in stat syscall cgroup status wchan stack; do
	cxvm_save /proc/$syncer/$f "proc-sync/$f"
	cxvm_save /proc/$syncer/task/$syncer/$f "proc-sync/task-$f"
done
cxvm_save /proc/$sleeper/stat proc-sleep/stat
cxvm_save /proc/$sleeper/syscall proc-sleep/syscall
cxvm_save $cg/cg1/io.stat io.stat-during-sync
cxvm_save $cg/cg1/memory.stat memory.stat-during-sync
cxvm_save $cg/cg1/io.pressure io.pressure-cg1-during-sync
cxvm_save $cg/cg2/io.pressure io.pressure-cg2-during-sync
cxvm_save /proc/pressure/io proc-pressure-io-during-sync
read -r _ _ state _ </proc/$syncer/stat
cxvm_log "proc captured: sync state $state_before before, $state after"
meta syncer_pid "$syncer"
meta_str syncer_state_before_capture "$state_before"
meta_str syncer_state_after_capture "$state"
wait "$syncer"
cxvm_log "sync done"
meta sync_ms $(($(cxvm_now_ms) - t0))
cxvm_save $cg/cg1/io.stat io.stat
cxvm_save $cg/cg2/io.stat io.stat-nothing-written
cxvm_save $cg/cg2/io.pressure io.pressure
cxvm_save $cg/cg1/memory.stat memory.stat-after-sync

# syncfs from cg2 with a little dirty data of cg1 (coreutils `sync -f` = syncfs(2))
cxvm_dirty cg1 "$mnt/dirty-cg1-b" 1
cxvm_cg_run cg2 sync -f "$mnt" || cxvm_fail "syncfs"
echo 0 >"$T/tracing_on"
cxvm_save "$T/trace" tracefs/trace-sync-inversion
meta cg1_ino "$(stat -c %i $cg/cg1)"
meta cg2_ino "$(stat -c %i $cg/cg2)"
kill "$sleeper"
rmdir "$T"

cxvm_save /proc/self/mountinfo mountinfo
cxvm_cg_run cg2 cat /proc/self/cgroup >"$CXVM_OUT/files/proc-self-cgroup-cg2"

# --- io.latency and iocost add keys to io.stat lines (best effort: recorded if they work)
if echo "$dev target=10000" 2>/dev/null >$cg/cg2/io.latency; then
	cxvm_save $cg/cg2/io.latency io.latency
	cxvm_cg_run cg2 dd if=/dev/zero of="$mnt/lat" bs=64k count=16 oflag=direct status=none
	cxvm_save $cg/cg2/io.stat io.stat-iolatency
	echo "$dev target=max" >$cg/cg2/io.latency
else
	cxvm_log "io.latency not writable on this kernel/device: no io.stat-iolatency"
fi
if echo "$dev enable=1" 2>/dev/null >$cg/io.cost.qos; then
	cxvm_save $cg/io.cost.qos io.cost.qos
	cxvm_save $cg/io.cost.model io.cost.model
	cxvm_cg_run cg2 dd if=/dev/zero of="$mnt/cost" bs=64k count=16 oflag=direct status=none
	cxvm_save $cg/cg2/io.stat io.stat-iocost
	cxvm_save $cg/io.stat io.stat-root-iocost
	echo "$dev enable=0" >$cg/io.cost.qos
fi
cxvm_log "captured $(find "$CXVM_OUT/files" -type f | wc -l) files"
