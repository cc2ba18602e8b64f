# SPDX-License-Identifier: GPL-2.0-or-later
# Storm soak (issue 15 item 2): randomized, seeded load for CXIOSYNC_STORM_SECONDS (default
# 60; the long mode is >= 600) against cxiosyncd: throttled writers that never stop under
# nested limits (/w wbps=2 MiB/s with /w/a at 1 MiB/s and /w/b inheriting; /c at 1 MiB/s on
# a second filesystem), sync and syncfs on both filesystems, a 4-thread syncer, `sync`
# processes SIGKILLed mid-call, calls 10-200 ms apart, and the daemon restarted by SIGTERM or
# SIGKILL every 8-20 s. storm_load.py runs the load and times every call; the host check
# (storm_soak.check.py) asserts each call's bound, the detection invariant from the
# daemon's own trace ("syncer seen"/"syncer left") against /proc samples, and prints the
# distribution. This shell asserts that every original io.max is back at the end.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"

SECONDS_STORM=${CXIOSYNC_STORM_SECONDS:-60}
SEED=${CXIOSYNC_STORM_SEED:-$(($(cxvm_now_ms) % 1000000))}
DETECTOR=${CXIOSYNC_STORM_DETECTOR:-auto}
cxvm_log "storm: ${SECONDS_STORM} s, seed $SEED (CXIOSYNC_STORM_SEED=$SEED repeats it), detector $DETECTOR"
cxvm_result storm_seconds "$SECONDS_STORM"
cxvm_result seed "$SEED"

# Second filesystem: ext4 on a loop device over a file in /run (tmpfs).
modprobe loop 2>/dev/null
truncate -s 256M /run/storm-fs2.img
LOOP=$(losetup --find --show /run/storm-fs2.img) || cxvm_fail "losetup"
mkfs.ext4 -q -F "$LOOP" || cxvm_fail "mkfs.ext4 $LOOP"
FS2=/mnt/storm2
mkdir -p "$FS2" && mount "$LOOP" "$FS2" || cxvm_fail "mount $LOOP"
LOOP_MAJMIN=$(cat "/sys/block/${LOOP##*/}/dev")
storm_cleanup() {
	cxd_cleanup
	[ -f /run/storm-daemon.pid ] && kill -KILL "$(cat /run/storm-daemon.pid)" 2>/dev/null
	umount "$FS2" 2>/dev/null
	losetup -d "$LOOP" 2>/dev/null
	return 0
}
trap storm_cleanup EXIT

cxvm_cgroup_setup
cxvm_cg_create w/a w/b c s1 s2
mkdir -p "$CXVM_SCRATCH_MNT/a" "$CXVM_SCRATCH_MNT/b" "$FS2/c"

cxd_config <<YAML
poll_interval_ms: 100
detector: $DETECTOR
YAML
cxd_listen

export STORM_FS="$CXVM_SCRATCH_MNT $FS2"
export STORM_SYNCER_CG=/s1 STORM_SYNC_CG=/s2
# Phase 1, baseline: the same syncers, no writers, no limits: each kind's unthrottled time.
python3 "$CXVM_DIR/scenarios/storm_load.py" "$CXVM_OUT" 8 "$SEED" baseline ||
	cxvm_fail "baseline load failed"

cxvm_io_max w "wbps=2097152"
cxvm_io_max w/a "wbps=1048576"
cxvm_io_max c "wbps=1048576" "$LOOP_MAJMIN"
declare -A ORIG
for cg in w w/a c; do ORIG[$cg]=$(cat "$(cxvm_cg_path $cg)/io.max"); done

cxd_start
echo "$CXD_PID" >/run/storm-daemon.pid
cxvm_log "daemon up: $(grep -oE 'ready: detector [a-z]+ \([^)]*' "$CXD_LOG" | tail -1)"

# The restarter's command: stop the daemon (SIGTERM or SIGKILL), start it again, wait for
# READY=1. A SIGKILLed first instance stays our zombie: "gone" means no /proc or state Z.
export STORM_DAEMON_CMD='
how=$1; pid=$(cat /run/storm-daemon.pid)
before=$(grep -c "READY=1" '"$CXD_NOTIFY_LOG"')
kill -$how $pid
for i in $(seq 600); do
  st=$(sed -E "s/^[0-9]+ \(.*\) ([A-Z]).*/\1/" /proc/$pid/stat 2>/dev/null) || break
  [ "$st" = Z ] && break; sleep 0.05
done
(echo $BASHPID >'"$CXVM_CGROOT"'/cxiosyncd/cgroup.procs &&
  NOTIFY_SOCKET='"$CXD_NOTIFY_SOCK"' exec '"$CXD_BIN"' --foreground --log-level=debug \
  --config='"$CXD_CFG"' --run-dir='"$CXD_RUN"' >>'"$CXD_LOG"' 2>&1) &
echo $! >/run/storm-daemon.pid
for i in $(seq 600); do
  [ "$(grep -c "READY=1" '"$CXD_NOTIFY_LOG"')" -gt "$before" ] && exit 0; sleep 0.05
done
exit 1'
export STORM_WRITERS="/w/a:$CXVM_SCRATCH_MNT/a /w/b:$CXVM_SCRATCH_MNT/b /c:$FS2/c"
python3 "$CXVM_DIR/scenarios/storm_load.py" "$CXVM_OUT" "$SECONDS_STORM" "$SEED" storm ||
	cxvm_fail "storm load failed"

# The last daemon: SIGTERM restores every boost it holds.
pid=$(cat /run/storm-daemon.pid)
kill -TERM "$pid"
for _ in $(seq 600); do
	[ -d "/proc/$pid" ] || break
	[ "$(sed -E 's/^[0-9]+ \(.*\) ([A-Z]).*/\1/' "/proc/$pid/stat" 2>/dev/null)" = Z ] && break
	sleep 0.05
done
[ -d "/proc/$pid" ] && [ "$(sed -E 's/^[0-9]+ \(.*\) ([A-Z]).*/\1/' "/proc/$pid/stat")" != Z ] &&
	cxvm_fail "the last cxiosyncd did not stop on SIGTERM in 30 s"
rm -f /run/storm-daemon.pid
lost=0
for cg in w w/a c; do
	now=$(cat "$(cxvm_cg_path $cg)/io.max")
	if [ "$now" != "${ORIG[$cg]}" ]; then
		cxvm_log "io.max of $cg: '$now', expected '${ORIG[$cg]}'"
		lost=$((lost + 1))
	fi
done
cxvm_result limits_lost "$lost"
cxvm_result restarts "$(wc -l <"$CXVM_OUT/restarts.txt" 2>/dev/null || echo 0)"
cxvm_result boosts "$(cxd_log_count 'action=boost ')"
cxvm_result refusals "$(cxd_log_count 'action=refuse ')"
cxvm_result poll_ms 100
[ "$lost" -eq 0 ] || cxvm_fail "$lost original io.max line(s) lost"
cxvm_log "storm done: $(wc -l <"$CXVM_OUT/calls-storm.txt") calls, limits intact"
