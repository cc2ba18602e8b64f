# SPDX-License-Identifier: GPL-2.0-or-later
# Tenants (issue 15 item 3), with the built-in boundary (each user@UID.service is a tenant):
#  1. user 1000's cron job syncing in a loop cannot lift the limit of user 1000's own heavy
#     writer: every sync is a self-sync ("one tenant"), nothing is boosted;
#  2. a sync from outside the tenant is boosted;
#  3. the tenant's boost budget survives a daemon restart (<run-dir>/budgets.json): once spent,
#     the restarted daemon refuses with budget-exhausted instead of handing out a new budget.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"
MIB=${CXD_DIRTY_MIB:-4}
U=user.slice/user-1000.slice/user@1000.service
# /user.slice has sync_isolation off by default: turn it on, so that only the tenant rule
# can be what refuses the boost in part 1.
# The boost ceiling is 2 MiB/s (as in daemon_budget) so that boosted syncs stay long and the
# budget, not the syncs' end, stops the boosting in part 2.
cxd_config <<YAML
cgroups:
  /:
    boost_ceiling: 2MiB/s
  /user.slice:
    sync_isolation: on
  /$U:
    boost_budget: 10% of 60s
YAML
cxvm_cgroup_setup
cxvm_cg_create "$U/app.slice/heavy.service" "$U/app.slice/cron.service" cg2
cxvm_io_max "$U/app.slice/heavy.service" "wbps=1048576"
orig=$(cxd_io_max "$U/app.slice/heavy.service")
cxd_start

# 1. The sibling sync loop, same tenant: two sync calls in a row from cron.service, each
# refused as a self-sync, each throttled.
cxd_dirty "$U/app.slice/heavy.service" heavy "$MIB"
cxd_sync_timed t_same1 "$U/app.slice/cron.service"
cxd_dirty "$U/app.slice/heavy.service" heavy2 2
cxd_sync_timed t_same2 "$U/app.slice/cron.service"
cxvm_log "same-tenant syncs: ${t_same1} ms ($MIB MiB), ${t_same2} ms (2 MiB)"
same_boosts=$(cxd_log_count 'action=boost ')
same_refusals=$(cxd_log_count 'refusal=self-sync.*one tenant')
grep -E 'action=refuse' "$CXD_LOG" | head -1
[ "$same_boosts" -eq 0 ] || cxvm_fail "a same-tenant sync lifted the tenant's own limit"
[ "$same_refusals" -ge 2 ] || cxvm_fail "not one same-tenant self-sync refusal per sync call"
[ "$t_same1" -ge $((MIB * 1000 / 2)) ] || cxvm_fail "same-tenant sync was fast: not throttled?"
[ "$(cxd_io_max "$U/app.slice/heavy.service")" = "$orig" ] || cxvm_fail "io.max changed"

# 2. A foreign sync (no tenant) is boosted; syncing in a loop it is boosted (at 2 MiB/s) until
# the tenant's budget (10% of 60 s = 6 s) is spent. 24 MiB keep it busy for longer than that.
cxd_dirty "$U/app.slice/heavy.service" burst 24
cxvm_cg_spawn cg2 sh -c 'while :; do sync; sleep 0.2; done'
looper=$!
spent=0
for _ in $(seq 200); do
	[ "$(cxd_log_count 'budget-exhausted')" -ge 1 ] && spent=1 && break
	sleep 0.1
done
# The loop goes; a sync still inside the call ends at the unthrottled flush of part 3.
kill "$looper" 2>/dev/null
wait "$looper" 2>/dev/null
foreign_boosts=$(cxd_log_count 'action=boost ')
[ "$foreign_boosts" -ge 1 ] || cxvm_fail "a sync from outside the tenant was not boosted"
[ "$spent" -eq 1 ] || cxvm_fail "the tenant's budget (10% of 60s) was never exhausted in 20 s"
cxd_wait_io_max "$U/app.slice/heavy.service" "$orig" 40 || cxvm_fail "io.max not restored"

# 3. Restart: the budget history comes back from /run.
cxd_stop
grep -q "user@1000.service" "$CXD_RUN/budgets.json" ||
	cxvm_fail "no budget history for the tenant in $CXD_RUN/budgets.json"
# Flush the writer's leftovers unthrottled while no daemon runs, so that part 3's sync
# measures only its own few MiB.
cxvm_io_max "$U/app.slice/heavy.service" "wbps=max"
sync
cxvm_io_max "$U/app.slice/heavy.service" "wbps=1048576"
before=$(wc -l <"$CXD_LOG")
cxd_start
cxd_dirty "$U/app.slice/heavy.service" again 4
cxd_sync_timed t_after cg2
after=$(tail -n +"$((before + 1))" "$CXD_LOG")
restart_boosts=$(grep -cE 'action=boost ' <<<"$after")
restart_budget=$(grep -cE "refusal=budget-exhausted.*tenant /$U" <<<"$after")
grep -E 'action=refuse' <<<"$after" | head -1
cxd_stop
cxvm_result same_tenant_refusals "$same_refusals"
cxvm_result sync_ms_same_tenant "$t_same1"
cxvm_result foreign_boosts "$foreign_boosts"
cxvm_result restart_boosts "$restart_boosts"
cxvm_result restart_budget_refusals "$restart_budget"
cxvm_result sync_ms_after_restart "$t_after"
[ "$restart_boosts" -eq 0 ] || cxvm_fail "the restarted daemon handed out a fresh budget"
[ "$restart_budget" -ge 1 ] || cxvm_fail "no budget-exhausted refusal for the tenant after restart"
[ "$(cxd_io_max "$U/app.slice/heavy.service")" = "$orig" ] || cxvm_fail "io.max not restored"
cxvm_log ok
