# SPDX-License-Identifier: GPL-2.0-or-later
# Measures cxiosyncd's minimal CapabilityBoundingSet under systemd (vmrun.py --init=systemd):
# starts from the candidate set, removes one capability at a time (a runtime drop-in), and
# runs the headline case each time: a unit in throttled.slice (1 MB/s) dirties CAPS_MIB MiB,
# `systemd-run --slice=system.slice --wait sync` must be boosted and fast, the daemon must
# log no permission error. Once with the default detector (auto: tracefs), once with
# --detector=procfs. CAPS_SYNC_USER=nobody: the syncer runs as that user. Result: caps.<detector>.<removed> = {ok, sync_ms, boosts, eperm, state}.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/systemd_common.inc"

CANDIDATES=${CAPS_CANDIDATES:-CAP_SYS_ADMIN CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_DAC_OVERRIDE CAP_SYS_RESOURCE}
DETECTORS=${CAPS_DETECTORS:-procfs auto}
MIB=${CAPS_MIB:-8}
DROPIN=/run/systemd/system/cxiosyncd.service.d/99-cxvm-caps.conf

save_journal() { journalctl -q -u cxiosyncd -o short-monotonic >"$CXVM_OUT/cxiosyncd.journal" 2>&1; }
trap save_journal EXIT
sd_install_deb
systemctl stop cxiosyncd
sd_slice 1M
mkdir -p "${DROPIN%/*}"
n=0
needed=""
for det in $DETECTORS; do
	for removed in none $CANDIDATES; do
		set_=""
		for c in $CANDIDATES; do [ "$c" = "$removed" ] || set_="$set_ $c"; done
		args=""
		[ "$det" = auto ] || args=" --detector=$det"
		# CAPS_UNIT_OVERRIDE: extra [Service] lines (e.g. to test a sandbox change).
		cat >"$DROPIN" <<UNIT
[Service]
CapabilityBoundingSet=
CapabilityBoundingSet=$set_
ExecStart=
ExecStart=/usr/sbin/cxiosyncd$args
${CAPS_UNIT_OVERRIDE:-}
UNIT
		systemctl daemon-reload
		n=$((n + 1))
		# Dirty first: the daemon sees cgroups created after its start only at its next tree
		# walk (30 s).
		sd_dirty "cxvm-caps-$n" "$MIB"
		since=${EPOCHREALTIME/./}
		state=started
		systemctl restart cxiosyncd || state=start-failed
		sync_ms=0 boosts=0 eperm=0
		if [ $state = started ]; then
			if [ -n "${CAPS_SYNC_USER:-}" ]; then
				# A syncer that is not root: its /proc/PID/task/TID files belong to that user.
				cxvm_time_ms sync_ms systemd-run --quiet --wait --slice=system.slice \
					-p User="$CAPS_SYNC_USER" sync || cxvm_fail "sync as $CAPS_SYNC_USER failed"
			else
				sd_sync_timed sync_ms
			fi
			sleep 0.5
			boosts=$(sd_journal_count "$since" '^boost ')
			eperm=$(sd_journal_count "$since" 'Operation not permitted|Permission denied|EPERM|EACCES|Read-only file system')
		fi
		chosen=$(journalctl -q -u cxiosyncd -o cat --since "@$((since / 1000000))" | grep -oE 'ready: detector [a-z]+' | tail -1)
		ok=false
		[ $state = started ] && [ "$boosts" -ge 1 ] && [ "$eperm" -eq 0 ] && ok=true
		[ $ok = false ] && [ "$removed" != none ] && needed="$needed $det:$removed"
		cxvm_log "detector=$det without ${removed}: $state, ${chosen#ready: }, sync $sync_ms ms, boosts $boosts, permission errors $eperm -> $ok"
		[ "$eperm" -gt 0 ] && journalctl -q -u cxiosyncd -o cat --since "@$((since / 1000000))" |
			grep -E 'Operation not permitted|Permission denied|EPERM|EACCES|Read-only file system' | head -3
		cxvm_result "caps.$det.$removed" "{\"ok\":$ok,\"state\":\"$state\",\"sync_ms\":$sync_ms,\"boosts\":$boosts,\"permission_errors\":$eperm,\"detector\":\"${chosen##* }\"}"
		[ $state = started ] || sd_sync_timed _unused
		systemctl stop cxiosyncd "cxvm-caps-$n"
	done
done
cxvm_result_str candidates "$CANDIDATES"
cxvm_result_str needed "$needed"
cxvm_log "capabilities whose removal broke the headline case:${needed:- none}"
rm -f "$DROPIN"
systemctl daemon-reload
