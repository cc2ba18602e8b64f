# SPDX-License-Identifier: GPL-2.0-or-later
# Limit on a parent (issue 5): tenants/ is limited, the writer runs in tenants/cg1; a sync
# from cg2 boosts tenants/ (where the limit sits) and restores it exactly.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"
MIB=${CXD_DIRTY_MIB:-16}
cxvm_cgroup_setup
cxvm_cg_create tenants/cg1 cg2
cxvm_io_max tenants "wbps=1048576 wiops=500"
orig=$(cxd_io_max tenants)
child_before=$(cat "$(cxvm_cg_path tenants/cg1)/io.max")
cxd_start
cxd_dirty tenants/cg1 parent $MIB
cxd_sync_timed t_parent cg2
cxvm_log "sync from cg2, limit on tenants/, writer in tenants/cg1: ${t_parent} ms"
cxd_wait_io_max tenants "$orig" 5 || cxvm_fail "tenants io.max not restored: '$(cxd_io_max tenants)'"
boost_line=$(grep -E 'action=boost ' "$CXD_LOG" | head -1)
echo "$boost_line"
cxd_stop
cxvm_result sync_ms_parent_limit "$t_parent"
cxvm_result_str io_max_original "$orig"
cxvm_result_str io_max_after "$(cxd_io_max tenants)"
echo "$boost_line" | grep -q 'cgroup=/tenants ' || cxvm_fail "the boost was not on /tenants: $boost_line"
echo "$boost_line" | grep -q 'dirtier=/tenants/cg1 ' || cxvm_fail "dirtier not /tenants/cg1"
[ "$(cat "$(cxvm_cg_path tenants/cg1)/io.max")" = "$child_before" ] || cxvm_fail "child io.max touched"
[ "$t_parent" -lt $((MIB * 1000 / 2)) ] || cxvm_fail "sync slow (${t_parent} ms): parent not boosted"
cxvm_log ok
