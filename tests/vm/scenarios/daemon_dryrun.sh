# SPDX-License-Identifier: GPL-2.0-or-later
# Dry run (issue 5): the headline scenario with --dry-run changes nothing (io.max never
# written, the sync stays slow) and logs what it would have done.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"
MIB=${CXD_DIRTY_MIB:-8}
cxvm_cgroup_setup
cxvm_cg_create cg1 cg2
cxvm_io_max cg1 "wbps=1048576"
orig=$(cxd_io_max cg1)
cxd_start --dry-run
cxd_dirty cg1 dry $MIB
cxvm_cg_spawn cg2 sync
syncpid=$!
changed=0
while kill -0 "$syncpid" 2>/dev/null; do
	[ "$(cxd_io_max cg1)" = "$orig" ] || changed=1
	sleep 0.1
done
wait "$syncpid"
would=$(cxd_log_count 'action=dry-run-boost')
grep -E 'action=dry-run-boost' "$CXD_LOG" | head -1
cxd_stop
cxvm_result would_boost_lines "$would"
cxvm_result io_max_changed "$changed"
[ "$changed" -eq 0 ] || cxvm_fail "io.max changed in dry-run mode"
[ "$would" -ge 1 ] || cxvm_fail "dry run did not log what it would do"
[ "$(cxd_log_count 'action=boost ')" -eq 0 ] || cxvm_fail "a boost was made in dry-run mode"
[ ! -s "$CXD_RUN/boosts.json" ] || grep -q '"boosts":\[\]' "$CXD_RUN/boosts.json" ||
	cxvm_fail "journal has records in dry-run mode"
cxvm_log ok
