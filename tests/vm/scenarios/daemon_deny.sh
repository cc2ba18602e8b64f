# SPDX-License-Identifier: GPL-2.0-or-later
# boost: deny on cg1 (issue 5): a foreign sync from cg2 gets no boost, stays slow, and the
# refusal is logged with its reason.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"
MIB=${CXD_DIRTY_MIB:-8}
cxd_config <<'YAML'
cgroups:
  /cg1:
    boost: deny
YAML
cxvm_cgroup_setup
cxvm_cg_create cg1 cg2
cxvm_io_max cg1 "wbps=1048576"
orig=$(cxd_io_max cg1)
cxd_start
cxd_dirty cg1 deny $MIB
cxd_sync_timed t_deny cg2
cxvm_log "sync from cg2 with boost: deny on cg1: ${t_deny} ms"
boosts=$(cxd_log_count 'action=boost ')
refusals=$(cxd_log_count 'refusal=boost-denied')
grep -E 'action=refuse' "$CXD_LOG" | head -2
cxd_stop
cxvm_result sync_ms_denied "$t_deny"
cxvm_result boosts "$boosts"
cxvm_result denied_refusals "$refusals"
[ "$boosts" -eq 0 ] || cxvm_fail "cg1 was boosted despite boost: deny"
[ "$refusals" -ge 1 ] || cxvm_fail "boost-denied refusal not logged"
[ "$(cxd_io_max cg1)" = "$orig" ] || cxvm_fail "io.max changed"
[ "$t_deny" -ge $((MIB * 1000 / 2)) ] || cxvm_fail "sync was fast (${t_deny} ms) despite deny"
cxvm_log ok
