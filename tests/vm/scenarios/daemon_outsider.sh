# SPDX-License-Identifier: GPL-2.0-or-later
# An outsider rewrites io.max of cg1 during a boost (issue 5): after the sync, the
# outsider's value stands, and the daemon logs both values.
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
cxd_start
cxd_dirty cg1 outsider $MIB
cxvm_cg_spawn cg2 sync
syncpid=$!
for _ in $(seq 200); do
	[ "$(cxd_log_count 'action=boost ')" -ge 1 ] && break
	sleep 0.05
done
[ "$(cxd_log_count 'action=boost ')" -ge 1 ] || cxvm_fail "no boost within 10 s"
# The admin / systemd reload: a new limit, 100 MiB/s.
cxvm_io_max cg1 "wbps=104857600"
theirs=$(cxd_io_max cg1)
wait "$syncpid"
for _ in $(seq 100); do
	[ "$(cxd_log_count 'action=kept-changed')" -ge 1 ] && break
	sleep 0.05
done
grep -E 'action=kept-changed' "$CXD_LOG"
kept=$(cxd_log_count 'action=kept-changed')
cxd_stop
cxvm_result_str io_max_outsider "$theirs"
cxvm_result_str io_max_after "$(cxd_io_max cg1)"
cxvm_result kept_changed "$kept"
[ "$(cxd_io_max cg1)" = "$theirs" ] || cxvm_fail "outsider's value lost: '$(cxd_io_max cg1)' != '$theirs'"
[ "$kept" -ge 1 ] || cxvm_fail "kept-changed not logged"
grep -E 'action=kept-changed' "$CXD_LOG" | grep -q 'theirs="rbps=max wbps=104857600' ||
	cxvm_fail "log line lacks the outsider's value"
cxvm_log ok
