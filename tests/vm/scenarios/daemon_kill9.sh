# SPDX-License-Identifier: GPL-2.0-or-later
# kill -9 of the daemon mid-boost, then restart (issue 5): the journal keeps the original
# limit, and the restarted daemon restores it before it sends READY=1.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"
MIB=${CXD_DIRTY_MIB:-16}
# A boost to 2 MiB/s (not max) keeps the boosted sync running for seconds: time to act
# in the middle of the boost.
cxd_config <<'YAML'
cgroups:
  /:
    boost_ceiling: 2MiB/s
YAML
cxvm_cgroup_setup
cxvm_cg_create cg1 cg2
cxvm_io_max cg1 "wbps=1048576"
orig=$(cxd_io_max cg1)
# The listener snapshots cg1's io.max the instant READY=1 arrives.
cxd_listen "$(cxvm_cg_path cg1)/io.max"
cxd_start
cxd_dirty cg1 kill9 $MIB
cxvm_cg_spawn cg2 sync
syncpid=$!
for _ in $(seq 200); do
	[ "$(cxd_log_count 'action=boost ')" -ge 1 ] && break
	sleep 0.05
done
[ "$(cxd_log_count 'action=boost ')" -ge 1 ] || cxvm_fail "no boost within 10 s"
cxd_kill9
lifted=$(cxd_io_max cg1)
journal=$(cat "$CXD_RUN/boosts.json")
cxvm_log "after kill -9: io.max '$lifted', journal: $journal"
echo "$journal" | grep -q '"cgroup":"/cg1"' || cxvm_fail "journal lacks the boost"
wait "$syncpid"  # the limit stays lifted: the sync finishes fast
cxd_start
at_ready=$(grep AT_READY "$CXD_NOTIFY_LOG" | tail -1 | cut -d' ' -f3-)
cxvm_log "io.max at the second READY=1: '$at_ready'"
grep -E 'action=restore .*reason=recovery' "$CXD_LOG"
cxd_stop
cxvm_result_str io_max_original "$orig"
cxvm_result_str io_max_after_kill "$lifted"
cxvm_result_str io_max_at_ready "$at_ready"
[ "$lifted" != "$orig" ] || cxvm_fail "io.max was not lifted when the daemon died"
[ "$at_ready" = "$orig" ] || cxvm_fail "at READY io.max was '$at_ready', not '$orig'"
[ "$(cxd_log_count 'action=restore .*reason=recovery')" -ge 1 ] || cxvm_fail "no recovery restore logged"
cxvm_log ok
