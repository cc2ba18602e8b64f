# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 8 proof under systemd as PID 1 (vmrun.py --init=systemd): the .deb installs and
# starts cxiosyncd (Type=notify), a throttled.slice (IOWriteBandwidthMax= 1M, [X-CxIOSync]
# Boost=allow) holds dirty data of a unit, and `systemd-run --slice=system.slice --wait sync`
#   A. is fast with cxiosyncd;
#   B. a daemon-reload that changes the slice's limit during a boost: afterwards io.max holds
#      systemd's new value (neither lifted nor our stale original: compare-and-restore);
#   C. `systemctl stop cxiosyncd` during a boost restores the limit at once;
#   D. is slow with the service stopped;
#   E. the D-Bus API is reachable on the system bus through activation.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/systemd_common.inc"

save_journal() { journalctl -q -u cxiosyncd -o short-monotonic >"$CXVM_OUT/cxiosyncd.journal" 2>&1; }
trap save_journal EXIT
MIB=${SD_DIRTY_MIB:-16}
ORIG="$CXVM_SCRATCH_MAJMIN rbps=max wbps=1000000 riops=max wiops=max"

# ---- install: dpkg -i starts the service (dh_installsystemd) -------------------------
t_start_us=${EPOCHREALTIME/./}
sd_install_deb
cxvm_result install_ms "${SD_INSTALL_MS:-0}"
cxvm_result_str install_method "$SD_INSTALL_METHOD"
cxvm_result_str state_after_dpkg "$(systemctl is-active cxiosyncd)"
systemctl is-active --quiet cxiosyncd || systemctl start cxiosyncd ||
	{ systemctl status --no-pager cxiosyncd; cxvm_fail "cxiosyncd did not start"; }
state=$(sd_prop cxiosyncd ActiveState)/$(sd_prop cxiosyncd SubState)
type=$(sd_prop cxiosyncd Type)
t_exec=$(sd_prop cxiosyncd ExecMainStartTimestampMonotonic)
t_active=$(sd_prop cxiosyncd ActiveEnterTimestampMonotonic)
ready_ms=$(((t_active - t_exec) / 1000))
cxvm_result_str service_state "$state"
cxvm_result_str service_type "$type"
cxvm_result_str service_enabled "$(systemctl is-enabled cxiosyncd)"
cxvm_result ready_ms "$ready_ms"
cxvm_log "cxiosyncd $state (Type=$type), exec -> READY in $ready_ms ms"
[ "$state" = active/running ] || cxvm_fail "cxiosyncd is $state"
[ "$type" = notify ] || cxvm_fail "Type=$type"
systemctl status --no-pager cxiosyncd | head -12
detector=$(journalctl -q -u cxiosyncd -o cat | grep -oE '(tracefs|procfs): [^,]*' | head -1)
cxvm_result_str detector "$detector"
cxvm_log "detector: $detector"

# ---- the throttled slice -----------------------------------------------------------
sd_slice 1M
sd_io_max_now=$(sd_io_max)
cxvm_result_str io_max_slice "$sd_io_max_now"
[ "$sd_io_max_now" = "$ORIG" ] || cxvm_fail "throttled.slice io.max '$sd_io_max_now' != '$ORIG'"

# One dirtier unit for all phases.
sd_dirtier_start

# ---- A. fast with cxiosyncd ---------------------------------------------------------
sd_dirtier "$MIB"
sd_sync_timed t_a
cxvm_log "A: sync from system.slice with cxiosyncd: $t_a ms ($MIB MiB behind 1 MB/s)"
sd_wait_io_max "$ORIG" 5 || cxvm_fail "A: io.max not restored: '$(sd_io_max)'"
cxvm_result sync_ms_with_daemon "$t_a"

# ---- B. daemon-reload during a boost -------------------------------------------------
# A 2 MB/s ceiling for the slice keeps the boost open for ~20 s (at `max` it ends in about a
# second), so the reload (itself seconds under TCG) lands inside it.
cat >/etc/cxiosync/cxiosync.d/90-cxvm.yaml <<'YAML'
cgroups:
  /throttled.slice:
    boost_ceiling: 2M
YAML
systemctl reload cxiosyncd || cxvm_fail "systemctl reload cxiosyncd failed"
sd_dirtier 40
since_b=${EPOCHREALTIME/./}
systemd-run --quiet --wait --slice=system.slice sync &
spid=$!
sd_wait_io_max "*wbps=2000000*" 30 || cxvm_fail "B: no boost to 2 MB/s seen: '$(sd_io_max)'"
boosted_b=$(sd_io_max)
cxvm_log "B: boosted: $boosted_b; changing the slice to 3M + daemon-reload"
cat >/etc/systemd/system/$SD_SLICE.d/80-cxvm-limit.conf <<UNIT
[Slice]
IOWriteBandwidthMax=
IOWriteBandwidthMax=$CXVM_SCRATCH_DEV 3M
UNIT
systemctl daemon-reload || cxvm_fail "daemon-reload failed"
after_reload=$(sd_io_max)
cxvm_log "B: right after daemon-reload: '$after_reload'"
applied_by=daemon-reload
if [ "$after_reload" = "$boosted_b" ]; then
	# systemd 257 did not write the reloaded limit (sd_apply_now): systemd's own write during
	# the boost, which is what B is about, then comes from set-property.
	applied_by="set-property (systemd $(systemctl show -p Version --value) kept io.max on daemon-reload)"
	sd_apply_now 3M
	cxvm_log "B: after set-property: '$(sd_io_max)'"
fi
cxvm_result_str reload_applied_by "$applied_by"
wait $spid
sleep 2
final_b=$(sd_io_max)
cxvm_log "B: after the sync: '$final_b'"
cxvm_result_str reload_boosted "$boosted_b"
cxvm_result_str reload_io_max_after_reload "$after_reload"
cxvm_result_str reload_io_max_final "$final_b"
journalctl -q -u cxiosyncd -o cat --since "@$((since_b / 1000000))" | grep -E '^(boost|restore) |someone else' | tail -6
kept=$(sd_journal_count "$since_b" 'changed by someone else during the boost')
cxvm_result reload_kept_theirs "$kept"
[ "$final_b" = "$CXVM_SCRATCH_MAJMIN rbps=max wbps=3000000 riops=max wiops=max" ] ||
	cxvm_fail "B: after the sync io.max is '$final_b', not systemd's 3 MB/s"
[ "$kept" -ge 1 ] || cxvm_fail "B: the reload did not land inside a boost (no compare-and-restore logged); retry"
rm /etc/systemd/system/$SD_SLICE.d/80-cxvm-limit.conf
rm -f /run/systemd/system.control/$SD_SLICE.d/*IOWriteBandwidthMax*.conf
systemctl daemon-reload
sd_wait_io_max "$ORIG" 5 || sd_apply_now 1M
sd_wait_io_max "$ORIG" 5 || cxvm_fail "B: slice back to 1M failed: '$(sd_io_max)'"

# ---- C. stop during a boost restores -------------------------------------------------
sd_dirtier "$MIB"
t0=${EPOCHREALTIME/./}
systemd-run --quiet --wait --slice=system.slice sync &
spid=$!
sd_wait_io_max "*wbps=2000000*" 30 || cxvm_fail "C: no boost seen: '$(sd_io_max)'"
boosted_c=$(sd_io_max)
systemctl stop cxiosyncd
after_stop=$(sd_io_max)
journal=$(</run/cxiosync/boosts.json)
cxvm_log "C: boosted '$boosted_c'; after systemctl stop: '$after_stop'; journal $journal"
cxvm_result_str stop_io_max_boosted "$boosted_c"
cxvm_result_str stop_io_max_after "$after_stop"
cxvm_result_str stop_journal "$journal"
[ "$after_stop" = "$ORIG" ] || cxvm_fail "C: stop left io.max at '$after_stop'"
wait $spid
t1=${EPOCHREALTIME/./}
cxvm_log "C: that sync took $(((t1 - t0) / 1000)) ms (limit restored mid-way)"

# ---- D. slow with the service stopped ------------------------------------------------
sd_dirtier "$MIB"
sd_sync_timed t_d
cxvm_log "D: sync with cxiosyncd stopped: $t_d ms"
cxvm_result sync_ms_service_stopped "$t_d"
cxvm_result dirty_mib "$MIB"

# ---- E. D-Bus activation ------------------------------------------------------------
systemctl is-active --quiet cxiosyncd && cxvm_fail "E: cxiosyncd unexpectedly active"
cxvm_time_ms t_e timeout 60 busctl --system introspect org.cxiosync1 /org/cxiosync1 \
	>"$CXVM_OUT/introspect.txt" 2>&1
rc_e=$?
cxvm_result dbus_introspect_rc "$rc_e"
cxvm_result dbus_introspect_ms "$t_e"
cxvm_result_str dbus_activated_state "$(systemctl is-active cxiosyncd)"
head -15 "$CXVM_OUT/introspect.txt"
cxvm_log "E: busctl introspect exit $rc_e after $t_e ms; cxiosyncd $(systemctl is-active cxiosyncd)"
journalctl -q -u cxiosyncd -o short-monotonic >"$CXVM_OUT/cxiosyncd.journal" 2>&1

# ---- verdicts --------------------------------------------------------------------------
[ $((t_a * 3)) -lt "$t_d" ] ||
	cxvm_fail "with cxiosyncd $t_a ms is not much faster than without $t_d ms"
[ "$rc_e" -eq 0 ] || cxvm_fail "E: D-Bus activation: busctl introspect exit $rc_e"
grep -q org.cxiosync1.Manager "$CXVM_OUT/introspect.txt" || cxvm_fail "E: no org.cxiosync1.Manager"
cxvm_log "ok: with cxiosyncd $t_a ms, stopped $t_d ms; ready in $ready_ms ms"
