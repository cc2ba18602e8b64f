# SPDX-License-Identifier: GPL-2.0-or-later
# A sync loop from a tenant with isolation on (issue 5): cg1's boost_budget (20% of 20 s)
# caps how long cg1 is boosted, however often the tenant syncs. The boost ceiling is 2 MiB/s
# so that a boosted sync still takes long and the budget, not the sync's end, stops it.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"
RUN_S=${CXD_BUDGET_RUN_S:-20}
cxd_config <<'YAML'
cgroups:
  /:
    boost_ceiling: 2MiB/s
  /cg1:
    boost_budget: 20% of 20s
YAML
cxvm_cgroup_setup
cxvm_cg_create cg1 tenant
cxvm_io_max cg1 "wbps=1048576"
orig=$(cxd_io_max cg1)
cxd_start
# A writer in cg1 that keeps dirtying (throttled to 1 MiB/s by io.max and dirty limits).
cxvm_cg_spawn cg1 sh -c "while :; do dd if=/dev/zero of=$CXVM_SCRATCH_MNT/w bs=1M count=64 status=none; done"
writer=$!
cxvm_wait_dirty cg1 $((4 * 1048576)) 10 || cxvm_fail "writer did not dirty cg1"
# The tenant syncs in a loop.
cxvm_cg_spawn tenant sh -c 'while :; do sync; sleep 0.2; done'
looper=$!
sleep "$RUN_S"
kill "$looper" "$writer" 2>/dev/null
wait "$looper" "$writer" 2>/dev/null
cxd_wait_io_max cg1 "$orig" 40 || true
# Sum of boosted time (restores' duration_sec, plus one still open).
boosted=$(grep -oE 'action=restore .*duration_sec=[0-9.]+' "$CXD_LOG" |
	sed -E 's/.*duration_sec=//' | awk '{s += $1} END {printf "%.3f", s}')
budget_ends=$(cxd_log_count 'budget-exhausted')
boosts=$(cxd_log_count 'action=boost ')
cxd_stop
cxvm_result run_seconds "$RUN_S"
cxvm_result boosted_seconds "$boosted"
cxvm_result boosts "$boosts"
cxvm_result budget_events "$budget_ends"
cxvm_log "tenant sync loop for ${RUN_S}s: $boosts boosts, ${boosted}s boosted, budget events $budget_ends"
[ "$boosts" -ge 1 ] || cxvm_fail "never boosted"
# 20% of 20 s = 4 s per sliding window; the run spans at most two windows: <= 8 s + slack.
awk -v b="$boosted" -v r="$RUN_S" 'BEGIN { exit !(b <= 0.2 * (r + 20) + 1.5) }' ||
	cxvm_fail "boosted ${boosted}s in ${RUN_S}s: budget not enforced"
[ "$budget_ends" -ge 1 ] || cxvm_fail "budget exhaustion never logged"
[ "$(cxd_io_max cg1)" = "$orig" ] || cxvm_fail "io.max not restored: '$(cxd_io_max cg1)'"
cxvm_log ok
