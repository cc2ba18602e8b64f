# SPDX-License-Identifier: GPL-2.0-or-later
# Headline proof (issue 5): cg1 limited to 1 MiB/s holds DIRTY_MIB (default 32) MiB of dirty
# page cache; `sync` from cg2 (sync_isolation on, the shipped default for the root) finishes
# in about the unthrottled time with cxiosyncd, and takes the throttled time without it.
# cg1's io.max is exactly its original value afterwards.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"

MIB=${CXD_DIRTY_MIB:-32}
LIMIT="wbps=1048576"
cxvm_cgroup_setup
cxvm_cg_create cg1 cg2

# 1. Baseline: no limit at all.
cxd_dirty cg1 base $MIB
cxd_sync_timed t_nolimit cg2
cxvm_log "no limit: sync of $MIB MiB took ${t_nolimit} ms"

# 2. Limit + cxiosyncd (detector auto: tracefs on this kernel).
cxvm_io_max cg1 "$LIMIT"
orig=$(cxd_io_max cg1)
cxvm_log "cg1 io.max: $orig"
cxd_start
cxd_dirty cg1 daemon $MIB
cxd_sync_timed t_daemon cg2
cxvm_log "limit + cxiosyncd: sync took ${t_daemon} ms"
cxd_wait_io_max cg1 "$orig" 5 || cxvm_fail "cg1 io.max not restored: '$(cxd_io_max cg1)' != '$orig'"
restored=$(cxd_io_max cg1)
boosts=$(cxd_log_count 'action=boost ')
restores=$(cxd_log_count 'action=restore ')
grep -E 'action=(boost|restore) ' "$CXD_LOG" | head -4
detector=$(grep -oE 'ready: detector [a-z]+' "$CXD_LOG" | head -1 | awk '{print $3}')
cxd_stop
[ "$(cxd_io_max cg1)" = "$orig" ] || cxvm_fail "io.max changed by the daemon stop"
[ -s "$CXD_RUN/boosts.json" ] && grep -q '"boosts":\[\]' "$CXD_RUN/boosts.json" ||
	cxvm_fail "journal not empty after stop: $(cat "$CXD_RUN/boosts.json")"

# 3. Vanilla: limit, no daemon.
cxd_dirty cg1 vanilla $MIB
cxd_sync_timed t_vanilla cg2
cxvm_log "limit, no daemon: sync took ${t_vanilla} ms"

cxvm_result dirty_mib "$MIB"
cxvm_result sync_ms_no_limit "$t_nolimit"
cxvm_result sync_ms_with_daemon "$t_daemon"
cxvm_result sync_ms_vanilla "$t_vanilla"
cxvm_result boosts "$boosts"
cxvm_result restores "$restores"
cxvm_result_str detector "$detector"
cxvm_result_str io_max_original "$orig"
cxvm_result_str io_max_after "$restored"

[ "$boosts" -ge 1 ] || cxvm_fail "no boost logged"
[ "$restores" -ge 1 ] || cxvm_fail "no restore logged"
[ $((t_daemon * 4)) -lt "$t_vanilla" ] ||
	cxvm_fail "with cxiosyncd ${t_daemon} ms is not much faster than vanilla ${t_vanilla} ms"
cxvm_log "ok: vanilla ${t_vanilla} ms, cxiosyncd ${t_daemon} ms, no limit ${t_nolimit} ms"
