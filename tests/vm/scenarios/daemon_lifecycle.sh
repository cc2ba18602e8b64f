# SPDX-License-Identifier: GPL-2.0-or-later
# systemd lifecycle (issue 5): SIGHUP reload with RELOADING=1/READY=1, a bad config keeps the
# old one and says why; lift_on_shutdown: a stop while the system is going down
# (--assume-shutdown=yes stands in for PID 1's SystemState "stopping") lifts every boostable
# limit, journaled as shutdown lifts; a clean stop otherwise restores; the next start
# restores the lifts before READY=1.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"
cxvm_cgroup_setup
cxvm_cg_create cg1 cg2 hard
cxvm_io_max cg1 "wbps=1048576"
cxvm_io_max hard "wbps=1048576"
orig=$(cxd_io_max cg1)
orig_hard=$(cxd_io_max hard)
cxd_config <<'YAML'
cgroups:
  /hard:
    boost: deny
YAML
cxd_listen "$(cxvm_cg_path cg1)/io.max"
cxd_start --assume-shutdown=yes

# 1. Reload with a valid config, then with a broken one.
kill -HUP "$CXD_PID"
for _ in $(seq 100); do grep -q 'configuration reloaded' "$CXD_LOG" && break; sleep 0.05; done
grep -q 'configuration reloaded' "$CXD_LOG" || cxvm_fail "reload not logged"
echo "cgroups: [this is not: valid" >"$CXD_CFG/cxiosync.yaml"
kill -HUP "$CXD_PID"
for _ in $(seq 100); do grep -q 'configuration not reloaded' "$CXD_LOG" && break; sleep 0.05; done
grep 'configuration not reloaded' "$CXD_LOG" || cxvm_fail "bad config not reported"
# The inotify-triggered reload may still be in flight: count from one copy of the log, and
# give an unfinished RELOADING=1 a moment to get its READY=1.
for _ in $(seq 40); do
	notes=$(cat "$CXD_NOTIFY_LOG")
	reloading=$(echo "$notes" | grep -c 'RELOADING=1')
	readies=$(echo "$notes" | grep -c 'READY=1')
	[ "$readies" -eq $((reloading + 1)) ] && break
	sleep 0.1
done
# Two SIGHUPs, plus the inotify-triggered reload of the config directory after the edit.
[ "$reloading" -ge 2 ] || cxvm_fail "expected >= 2 RELOADING=1, got $reloading"
[ "$readies" -eq $((reloading + 1)) ] || cxvm_fail "expected $((reloading + 1)) READY=1, got $readies"
kill -0 "$CXD_PID" || cxvm_fail "daemon died on a bad config"

# 2. Stop while "the system is going down": every boostable limit is lifted.
cxd_stop
lifted=$(cxd_io_max cg1)
hard_after=$(cxd_io_max hard)
journal=$(cat "$CXD_RUN/boosts.json")
cxvm_log "after shutdown stop: cg1 '$lifted', hard '$hard_after'"
grep -q 'STOPPING=1' "$CXD_NOTIFY_LOG" || cxvm_fail "no STOPPING=1"
# All keys max: the kernel drops the device line altogether.
[ -z "$lifted" ] || echo "$lifted" | grep -q 'wbps=max' || cxvm_fail "cg1 not lifted on shutdown: '$lifted'"
[ "$hard_after" = "$orig_hard" ] || cxvm_fail "boost: deny cgroup lifted on shutdown"
echo "$journal" | grep -q '"shutdown_lift":true' || cxvm_fail "lift not journaled: $journal"

# 3. Next start (no reboot happened): the lift is restored before READY=1.
echo "" >"$CXD_CFG/cxiosync.yaml"
cxd_start --assume-shutdown=no
at_ready=$(grep AT_READY "$CXD_NOTIFY_LOG" | tail -1 | cut -d' ' -f3-)
[ "$at_ready" = "$orig" ] || cxvm_fail "at READY cg1 io.max was '$at_ready', not '$orig'"
# 4. A clean stop (not shutting down) with nothing boosted leaves the limits alone.
cxd_stop
[ "$(cxd_io_max cg1)" = "$orig" ] || cxvm_fail "clean stop changed cg1"
cxvm_result reloads "$reloading"
cxvm_result_str io_max_after_shutdown_stop "$lifted"
cxvm_result_str io_max_at_next_ready "$at_ready"
cxvm_log ok
