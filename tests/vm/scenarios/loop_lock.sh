# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 26 item 5: while cxiosync configures a device it holds a BSD lock (LOCK_EX) on the
# node, as systemd's loop-util does (BLOCK_DEVICE_LOCKING.md), so udev does not probe a
# half-made device; a second `flock -n` on the node fails until configuration is done.
# CXIOSYNC_TEST_DEVICE_LOCK_HOLD_MS keeps the lock 4 s after the device is configured (it is
# bound, visible in sysfs, from the start of that window), so the check below is not a race:
# it runs once sysfs shows the device and must finish inside those 4 s. The old code took no
# lock: `flock -n` succeeded.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
. "$CXVM_DIR/scenarios/nbd_lib.inc"
cxl_no_leaks
img=$CXVM_SCRATCH_MNT/lock.img
truncate -s 16M "$img"

# lock_check KIND SYSFS_TEST ADD_ARGS...: starts an add with the hold, waits (10 s) for the
# device to show up in sysfs, checks the lock is held, then released once the add is done.
lock_check() {
	local kind=$1 probe=$2 dev="" i t0 rc
	shift 2
	t0=$(date +%s%N)
	CXIOSYNC_TEST_DEVICE_LOCK_HOLD_MS=4000 "$CXL_BIN" --run-dir "$CXL_RUN" --json add "$img" "$@" \
		>/tmp/lock_add.json 2>/tmp/lock_add.err &
	local apid=$!
	for i in $(seq 200); do
		dev=$($probe) && [ -n "$dev" ] && break
		sleep 0.05
	done
	[ -n "$dev" ] || cxvm_fail "$kind: no configured device within 10 s: $(cat /tmp/lock_add.err)"
	rc=0
	flock -n -E 99 "/dev/$dev" true || rc=$?
	local seen=$((($(date +%s%N) - t0) / 1000000))
	cxl_expect "$kind: flock -n on /dev/$dev while configuring (99 = locked)" "$rc" 99
	kill -0 $apid 2>/dev/null || cxvm_fail "$kind: add ended before the check (${seen} ms): check not valid"
	wait $apid || cxvm_fail "$kind: add failed: $(cat /tmp/lock_add.err)"
	rc=0
	flock -n -E 99 "/dev/$dev" true || rc=$?
	cxl_expect "$kind: flock -n on /dev/$dev after setup" "$rc" 0
	cxvm_result "lock_$kind" "{\"device\": \"$dev\", \"checked_after_ms\": $seen}"
	cxl detach "$dev" >/dev/null || cxvm_fail "$kind: detach $dev"
}

loop_bound() {
	local d
	for d in /sys/block/loop*; do
		[ "$(cat "$d/loop/backing_file" 2>/dev/null)" = "$img" ] && { echo "${d##*/}"; return 0; }
	done
	return 1
}
nbd_up() {
	local d
	for d in /sys/block/nbd*; do
		[ -e "$d/pid" ] && { echo "${d##*/}"; return 0; }
	done
	return 1
}

lock_check loop loop_bound
lock_check nbd nbd_up --backend nbd --workers 2
cxl_no_leaks
nbd_no_leaks
cxvm_log ok
