# SPDX-License-Identifier: GPL-2.0-or-later
# Self-sync (issue 5): a sync from inside the limited cgroup gets no help — it stays
# throttled, nothing is boosted, and the refusal is logged once.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"
MIB=${CXD_DIRTY_MIB:-8}
cxvm_cgroup_setup
cxvm_cg_create cg1
cxvm_io_max cg1 "wbps=1048576"
orig=$(cxd_io_max cg1)
cxd_start
cxd_dirty cg1 self $MIB
cxd_sync_timed t_self cg1
cxvm_log "self-sync of $MIB MiB from cg1: ${t_self} ms"
boosts=$(cxd_log_count 'action=boost ')
refusals=$(cxd_log_count 'refusal=self-sync')
grep -E 'action=refuse' "$CXD_LOG" | head -2
cxd_stop
cxvm_result sync_ms_self "$t_self"
cxvm_result boosts "$boosts"
cxvm_result self_sync_refusals "$refusals"
[ "$boosts" -eq 0 ] || cxvm_fail "a self-sync was boosted"
[ "$refusals" -ge 1 ] || cxvm_fail "self-sync refusal not logged"
[ "$(cxd_io_max cg1)" = "$orig" ] || cxvm_fail "io.max changed"
# Throttled: at 1 MiB/s, MIB MiB take at least ~MIB/2 seconds even counting early writeback.
[ "$t_self" -ge $((MIB * 1000 / 2)) ] || cxvm_fail "self-sync was fast (${t_self} ms): not throttled?"
cxvm_log ok
