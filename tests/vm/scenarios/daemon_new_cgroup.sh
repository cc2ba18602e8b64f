# SPDX-License-Identifier: GPL-2.0-or-later
# A cgroup created after cxiosyncd's tree walk is handled within about a second, not at the
# next scheduled walk (30 s): with cxiosyncd already running, a new cgroup gets its own write
# limit (1 MiB/s), dirties MIB (default 8) MiB, and `sync` from cg2 a few seconds after its
# creation is fast; the limit is restored exactly. Once per detector in DETECTORS (default
# "tracefs procfs"; procfs must learn the new limit without any event naming the cgroup),
# then once (tracefs) for an old cgroup that gets its limit only after the walk.
# Then the same without a daemon: the throttled time (MIB s).
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"

MIB=${CXD_NEWCG_MIB:-8}
LIMIT="wbps=1048576"
DETECTORS=${CXD_NEWCG_DETECTORS:-tracefs procfs}
cxvm_cgroup_setup
cxvm_cg_create cg2
TIMES=

# case NAME DETECTOR WHEN: cgroup NAME gets the limit after the daemon's walk; WHEN=new
# creates it then too, WHEN=old creates it (unlimited) before the daemon starts, as
# `systemctl set-property` limits an existing unit.
newcg_case() {
	local cg=$1 det=$2 when=$3
	[ "$when" = old ] && cxvm_cg_create "$cg"
	cxd_start --detector="$det"
	# The startup walk is over by now (first tick: 100 ms after start).
	sleep 1
	t_ready=$(cxvm_now_ms)
	[ "$when" = new ] && cxvm_cg_create "$cg"
	cxvm_io_max "$cg" "$LIMIT"
	t_created=$(cxvm_now_ms)
	orig=$(cxd_io_max "$cg")
	cxd_dirty "$cg" "f_$cg" "$MIB"
	t_sync=$(cxvm_now_ms)
	cxd_sync_timed t_daemon cg2
	t_end=$(cxvm_now_ms)
	cxd_wait_io_max "$cg" "$orig" 5 || cxvm_fail "$cg: io.max not restored: '$(cxd_io_max "$cg")' != '$orig'"
	boosts=$(cxd_log_count "action=boost cgroup=/$cg ")
	grep -E "action=(boost|restore) cgroup=/$cg " "$CXD_LOG" | head -2
	cxd_stop
	since_ready=$((t_end - t_ready))
	cxvm_log "$cg ($det): limited $((t_sync - t_created)) ms before the sync, sync took $t_daemon ms, $since_ready ms after the walk; boosts: $boosts"
	cxvm_result "sync_ms_${cg}" "$t_daemon"
	TIMES="$TIMES $cg=$t_daemon"
	cxvm_result "limited_to_sync_ms_${cg}" "$((t_sync - t_created))"
	cxvm_result "walk_to_sync_end_ms_${cg}" "$since_ready"
	cxvm_result "boosts_${cg}" "$boosts"
	# Proof only while the scheduled walk (30 s after start) has not happened yet.
	[ "$since_ready" -lt 25000 ] || cxvm_fail "$cg: inconclusive, the sync ended ${since_ready} ms after the walk"
	[ "$boosts" -ge 1 ] || cxvm_fail "$cg: not boosted"
	[ "$(cxd_io_max "$cg")" = "$orig" ] || cxvm_fail "$cg: io.max changed by the daemon stop"
}

for det in $DETECTORS; do newcg_case "new_$det" "$det" new; done
# An old cgroup is learnt when a sync waits on it: only tracefs names it (procfs: at the walk).
newcg_case old_tracefs tracefs old

# Without a daemon (what an unknown cgroup got before: nothing).
cxvm_cg_create new_vanilla
cxvm_io_max new_vanilla "$LIMIT"
cxd_dirty new_vanilla f_vanilla "$MIB"
cxd_sync_timed t_vanilla cg2
cxvm_log "no daemon: sync took $t_vanilla ms"
cxvm_result dirty_mib "$MIB"
cxvm_result sync_ms_vanilla "$t_vanilla"

for dt in $TIMES; do
	[ $((${dt#*=} * 4)) -lt "$t_vanilla" ] ||
		cxvm_fail "${dt%=*}: ${dt#*=} ms is not much faster than without a daemon ($t_vanilla ms)"
done
cxvm_log "ok: $TIMES (ms) vs $t_vanilla ms without a daemon"
