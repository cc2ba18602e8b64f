# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 8 item 1 under systemd as PID 1: cxiosyncd takes policy from [X-CxIOSync] sections of
# unit drop-ins, in systemd's own order (DropInPaths over PID 1's private socket):
#   A. the YAML denies boosts everywhere (/ boost: deny); throttled.slice's drop-in
#      (Boost=allow, written by sd_slice) wins for the slice: `cxiosyncctl show` names the
#      drop-in's file:line and a sync from system.slice is fast;
#   B. editing the drop-in to Boost=deny applies at once (inotify, no reload): `show` says so
#      and the sync is slow, the refusal logged;
#   C. a NEW drop-in file applies after `systemctl daemon-reload` (systemd's Reloading signal:
#      DropInPaths lists it only from then on), with its own file:line.
# Runs after systemd_pid1 (or installs the package itself).
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/systemd_common.inc"

# On any exit: the journal for the report, and no policy of ours left for the next scenario.
cleanup() {
	journalctl -q -u cxiosyncd -o short-monotonic >"$CXVM_OUT/cxiosyncd.journal" 2>&1
	rm -f "$EXTRA" /etc/cxiosync/cxiosync.d/90-cxvm-dropins.yaml
	printf '[X-CxIOSync]\nBoost=allow\n' >"$DROPIN"
	systemctl daemon-reload
	systemctl reload cxiosyncd
}
MIB=${SD_DROPIN_MIB:-6}
DROPIN=/etc/systemd/system/$SD_SLICE.d/70-cxiosync.conf
EXTRA=/etc/systemd/system/$SD_SLICE.d/80-cxvm-maxboost.conf
ORIG="$CXVM_SCRATCH_MAJMIN rbps=max wbps=1000000 riops=max wiops=max"
trap cleanup EXIT

sd_install_deb # nothing to do after systemd_pid1
systemctl is-active --quiet cxiosyncd || systemctl start cxiosyncd || cxvm_fail "cannot start cxiosyncd"
# Every scenario has its own scratch disk: the slice's limit and the dirtier move to this one.
systemctl stop cxvm-dirtier.service 2>/dev/null
sd_slice 1M
sd_dirtier_start
sd_wait_io_max "$ORIG" 10 || cxvm_fail "throttled.slice io.max is '$(sd_io_max)', not '$ORIG'"
how=$(journalctl -q -u cxiosyncd -o cat | grep -o 'unit drop-ins: [^(]*' | tail -1)
cxvm_result_str dropin_source "$how"
cxvm_log "cxiosyncd: $how"
case "$how" in *"asking systemd"*) ;; *) cxvm_fail "cxiosyncd does not ask systemd: '$how'" ;; esac

# show_knob KNOB: "VALUE SOURCE" of KNOB in `cxiosyncctl show throttled.slice`.
show_knob() {
	cxiosyncctl show "$SD_SLICE" | awk -v k="$1" '$1 == k { print $2, $3; exit }'
}
# wait_knob KNOB "VALUE SOURCE" TIMEOUT_S
wait_knob() {
	local end=$(($(cxvm_now_ms) + $3 * 1000))
	while [ "$(show_knob "$1")" != "$2" ]; do
		[ "$(cxvm_now_ms)" -ge "$end" ] && return 1
		sleep 0.1
	done
}

# ---- A. YAML denies everywhere, the slice's drop-in allows ------------------------------
rm -f /etc/cxiosync/cxiosync.d/90-cxvm.yaml
cat >/etc/cxiosync/cxiosync.d/90-cxvm-dropins.yaml <<'YAML'
cgroups:
  /:
    boost: deny
YAML
systemctl reload cxiosyncd || cxvm_fail "systemctl reload cxiosyncd failed"
cat >"$DROPIN" <<'UNIT'
# cxvm: the slice's cxiosync policy
[X-CxIOSync]
Boost=allow
UNIT
wait_knob boost "allow $DROPIN:3" 10 ||
	cxvm_fail "A: show $SD_SLICE: boost is '$(show_knob boost)', not allow from $DROPIN:3"
cxiosyncctl show "$SD_SLICE" | tee "$CXVM_OUT/show_a.txt"
root_boost=$(cxiosyncctl show / | awk '$1 == "boost" { print $2, $3; exit }')
cxvm_result_str show_a_boost "$(show_knob boost)"
cxvm_result_str show_a_root_boost "$root_boost"
case "$root_boost" in "deny /etc/cxiosync/cxiosync.d/90-cxvm-dropins.yaml:"*) ;;
*) cxvm_fail "A: / boost is '$root_boost', not the YAML's deny" ;; esac
# What starting a transient unit costs by itself (seconds under TCG on a loaded host, and more
# with systemd 257): subtracted from both syncs in the verdict, which is about the sync.
cxvm_time_ms t_run systemd-run --quiet --wait --slice=system.slice true
cxvm_result systemd_run_ms "$t_run"
sd_dirtier "$MIB"
sd_sync_timed t_a
cxvm_log "A: drop-in Boost=allow over YAML deny: sync $t_a ms ($MIB MiB behind 1 MB/s)"
cxvm_result sync_ms_dropin_allow "$t_a"
sd_wait_io_max "$ORIG" 5 || cxvm_fail "A: io.max not restored: '$(sd_io_max)'"

# ---- B. edit the drop-in: applies without any reload -----------------------------------
t0=$(cxvm_now_ms)
sed -i 's/^Boost=allow$/Boost=deny/' "$DROPIN"
wait_knob boost "deny $DROPIN:3" 10 ||
	cxvm_fail "B: show $SD_SLICE: boost is '$(show_knob boost)' 10 s after the edit"
t_edit=$(($(cxvm_now_ms) - t0))
cxvm_log "B: the edit reached cxiosyncd's policy in $t_edit ms"
cxvm_result edit_to_policy_ms "$t_edit"
since_b=${EPOCHREALTIME/./}
sd_dirtier "$MIB"
sd_sync_timed t_b
refused=$(sd_journal_count "$since_b" "not boosting /$SD_SLICE .*boost-denied")
cxvm_log "B: drop-in Boost=deny: sync $t_b ms, $refused refusal line(s)"
cxvm_result sync_ms_dropin_deny "$t_b"
cxvm_result refusals_b "$refused"
[ "$(sd_io_max)" = "$ORIG" ] || cxvm_fail "B: io.max changed under Boost=deny: '$(sd_io_max)'"
[ "$refused" -ge 1 ] || cxvm_fail "B: no refusal logged"

# ---- C. a new drop-in file counts after daemon-reload ----------------------------------
sed -i 's/^Boost=deny$/Boost=allow/' "$DROPIN"
wait_knob boost "allow $DROPIN:3" 10 || cxvm_fail "C: boost did not go back to allow"
cat >"$EXTRA" <<'UNIT'
[X-CxIOSync]
MaxBoostSec=7s
UNIT
sleep 2 # past the debounce: systemd does not list the file yet
before_reload=$(show_knob max_boost_seconds)
[ "$before_reload" != "7 $EXTRA:2" ] ||
	cxvm_fail "C: a new file applied before daemon-reload: not systemd's DropInPaths"
systemctl daemon-reload || cxvm_fail "daemon-reload failed"
wait_knob max_boost_seconds "7 $EXTRA:2" 10 ||
	cxvm_fail "C: max_boost_seconds is '$(show_knob max_boost_seconds)' after daemon-reload"
cxvm_log "C: new file before daemon-reload: '$before_reload'; after: '$(show_knob max_boost_seconds)'"
cxvm_result_str max_boost_before_reload "$before_reload"
cxvm_result_str max_boost_after_reload "$(show_knob max_boost_seconds)"
cxiosyncctl show "$SD_SLICE" | tee "$CXVM_OUT/show_c.txt"
reloaded=$(journalctl -q -u cxiosyncd -o cat | grep -c 'systemd reloaded its units')
cxvm_result reloading_signals_seen "$reloaded"

[ $(((t_a - t_run) * 3)) -lt $((t_b - t_run)) ] ||
	cxvm_fail "allow $t_a ms is not much faster than deny $t_b ms (systemd-run alone: $t_run ms)"
cxvm_log "ok: allow $t_a ms, deny $t_b ms, edit applied in $t_edit ms"
