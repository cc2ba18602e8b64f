# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 8 item 4 under systemd as PID 1 (vmrun.py --init=systemd): the package's life cycle
# with the real dpkg and the real maintainer scripts. Runs after systemd_pid1 in the same boot,
# which installed the .deb ($CXVM_DEB) with dpkg -i and saw the service start (Type=notify).
#   U. upgrade to a higher version while the service runs and a boost is in force: the same
#      .deb repacked as VERSION+cxvm1 (dpkg-deb -R / -b; payload and maintainer scripts
#      unchanged), installed in dpkg -i's two steps, as apt does: --unpack, then (with a sync
#      waiting and the slice's limit boosted) --configure, whose postinst restarts the
#      service. Checked: a new main PID; the old daemon's boost ended at its stop with the
#      slice's limit in io.max (restored, or already rewritten by systemd at the postinst's
#      daemon-reload), no shutdown lift, an empty boost journal; persistent and --runtime
#      settings, the admin's edit of the conffile and the admin's files survive.
#   R. dpkg -r: the service stops, programs and unit files go, the configuration and
#      /var/lib/cxiosync stay (dpkg state config-files).
#   P. dpkg -P: every file of the package, /run/cxiosync, /var/lib/cxiosync and the unit's
#      enablement go. What stays: files dpkg does not own (the admin's cxiosync.d/*.yaml, a
#      systemd drop-in) and the directories holding them. The edited conffile: whatever dpkg
#      does is recorded (conffile_edited_after_purge) and checked against what it did when
#      this scenario was written (deleted: dpkg removes conffiles on purge, edited or not).
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/systemd_common.inc"

read -r dirty_expire </proc/sys/vm/dirty_expire_centisecs
finish() {
	echo "$dirty_expire" >/proc/sys/vm/dirty_expire_centisecs
	journalctl -q -u cxiosyncd -o short-monotonic >"$CXVM_OUT/cxiosyncd.journal" 2>&1
}
trap finish EXIT
CONF=/etc/cxiosync/cxiosync.yaml
ADMIN_YAML=/etc/cxiosync/cxiosync.d/91-cxvm-admin.yaml
ADMIN_DROPIN=/etc/systemd/system/cxiosyncd.service.d/90-cxvm-admin.conf
# MIB at BOOST bytes/s must outlast dpkg --configure under TCG (measured 37 s on a loaded
# host): 4 MiB at 50 KB/s is 84 s. The scenario then ends the sync early (systemd lifts the
# slice's limit).
# Rates in K (x1000), as IOWriteBandwidthMax=.
LIMIT=${SD_PKG_LIMIT:-25K} BOOST=${SD_PKG_BOOST:-50K} MIB=${SD_PKG_MIB:-4}
ORIG="$CXVM_SCRATCH_MAJMIN rbps=max wbps=${LIMIT%K}000 riops=max wiops=max"

pkg_status() { dpkg-query -W -f='${Status} ${Version}' cxiosync 2>/dev/null; }
# dpkg_timed VAR NAME ARGS...: dpkg ARGS, output to $CXVM_OUT/dpkg-NAME.log (and the log),
# duration in ms in VAR and in the result as NAME_ms.
dpkg_timed() {
	local var=$1 name=$2
	shift 2
	cxvm_time_ms "$var" dpkg "$@" >"$CXVM_OUT/dpkg-$name.log" 2>&1
	local rc=$?
	cat "$CXVM_OUT/dpkg-$name.log"
	cxvm_result "${name}_ms" "${!var}"
	cxvm_log "dpkg $*: exit $rc after ${!var} ms"
	[ $rc -eq 0 ] || cxvm_fail "dpkg $* failed"
}
# show_knob CG KNOB: "VALUE SOURCE" of one policy knob (cxiosyncctl show --json).
show_knob() {
	cxiosyncctl show "$1" --json=short | jq -r ".policy.$2 | \"\(.value) \(.source)\""
}

# ---- the installed package ------------------------------------------------------------------
sd_find_deb
[ -n "$SD_DEB" ] || cxvm_fail "no .deb: set CXVM_DEB (ctest: deb.prebuilt) or run scripts/build-deb.sh"
SD_DEB_VERSION=$(dpkg-deb -f "$SD_DEB" Version) || cxvm_fail "dpkg-deb -f $SD_DEB failed"
if [ "$(pkg_status)" = "install ok installed $SD_DEB_VERSION" ]; then
	cxvm_log "cxiosync $SD_DEB_VERSION installed by dpkg (systemd_pid1)"
else
	# Alone (vmrun.py systemd_package): install it here.
	cxvm_log "cxiosync not installed by dpkg ($(pkg_status)); dpkg -i $SD_DEB"
	dpkg_timed t install -i "$SD_DEB"
fi
cxvm_result_str deb "$SD_DEB"
cxvm_result_str version_before "$SD_DEB_VERSION"
systemctl reset-failed 2>/dev/null
systemctl is-active --quiet cxiosyncd || systemctl start cxiosyncd || cxvm_fail "cxiosyncd does not start"
# systemd_pid1 leaves its dirtier unit behind (a systemd-plan.sh boot wipes nothing).
systemctl stop cxvm-dirtier.service 2>/dev/null

# ---- the admin's changes ------------------------------------------------------------------
# An edit of the shipped conffile, a file of their own in cxiosync.d/ (also: a budget that the
# earlier scenarios' boosts of this slice cannot have spent) and a systemd drop-in.
printf '\n# cxvm: edited by the admin\n' >>"$CONF"
cat >"$ADMIN_YAML" <<'YAML'
cgroups:
  /throttled.slice:
    boost_budget: 100% of 120s
    max_boost_seconds: 120
YAML
mkdir -p "${ADMIN_DROPIN%/*}"
printf '[Service]\nEnvironment=CXVM_ADMIN_DROPIN=1\n' >"$ADMIN_DROPIN"
conf_md5=$(md5sum "$CONF")

# ---- U. upgrade with a boost in force ------------------------------------------------------
sd_slice "$LIMIT"
[ "$(sd_io_max)" = "$ORIG" ] || cxvm_fail "throttled.slice io.max '$(sd_io_max)' != '$ORIG'"
# The dirty data must wait (a minute, with the repack and --unpack) for the sync: no expiry
# writeback meanwhile. A cgroup that holds dirty data also stays in cxiosyncd's model (one
# that had none at the last tree walk may be unknown when the sync names its inode).
echo 360000 >/proc/sys/vm/dirty_expire_centisecs
sd_dirty cxvm-pkg-dirty "$MIB"
# The restart picks up the drop-in and the dirtier's cgroup (created after the daemon's start).
systemctl restart cxiosyncd || cxvm_fail "restart failed"
[ "$(sd_prop cxiosyncd Environment)" = CXVM_ADMIN_DROPIN=1 ] || cxvm_fail "the admin's drop-in is not in effect"
cxiosyncctl ceiling throttled.slice "$BOOST" >/dev/null || cxvm_fail "cxiosyncctl ceiling failed"
cxiosyncctl isolate system.slice on --runtime >/dev/null || cxvm_fail "cxiosyncctl isolate --runtime failed"
# What `cxiosyncctl show` must say after the upgrade (value and source).
ceiling_before="${BOOST%K}000 runtime" isolate_before="on runtime"
cxvm_log "setup done: $LIMIT limit, $MIB MiB dirty, runtime settings made"

new_version=$SD_DEB_VERSION+cxvm1
cxvm_time_ms t_repack sh -c "rm -rf /tmp/cxvm-pkg && dpkg-deb -R '$SD_DEB' /tmp/cxvm-pkg &&
	sed -i 's/^Version: .*/Version: $new_version/' /tmp/cxvm-pkg/DEBIAN/control &&
	dpkg-deb -Zgzip -z1 -b /tmp/cxvm-pkg /tmp/cxiosync_new.deb >/dev/null" ||
	cxvm_fail "repacking $SD_DEB as $new_version failed"
cxvm_result repack_ms "$t_repack"

pid_old=$(sd_prop cxiosyncd MainPID)
dpkg_timed t_unpack upgrade_unpack --unpack /tmp/cxiosync_new.deb
pid_unpacked=$(sd_prop cxiosyncd MainPID)
cxvm_result_str status_unpacked "$(pkg_status)"
# Debian's restart-after-upgrade: the prerm leaves the service running, the postinst restarts it.
[ "$pid_unpacked" = "$pid_old" ] || cxvm_fail "U: --unpack restarted the service ($pid_old -> $pid_unpacked)"

since_u=${EPOCHREALTIME/./}
systemd-run --quiet --wait --slice=system.slice sync &
spid=$!
sd_wait_io_max "*wbps=${BOOST%K}000 *" 30 || {
	cxiosyncctl syncers
	cxiosyncctl show throttled.slice
	cxiosyncctl list
	cxvm_fail "U: no boost to $BOOST seen: '$(sd_io_max)'"
}
boosted_u=$(sd_io_max)
cxvm_log "U: boosted: $boosted_u; dpkg --configure"
dpkg_timed t_configure upgrade_configure --configure cxiosync
after_configure=$(sd_io_max)
syncing=$(kill -0 $spid 2>/dev/null && echo yes || echo no)
pid_new=$(sd_prop cxiosyncd MainPID)
state_u=$(sd_prop cxiosyncd ActiveState)/$(sd_prop cxiosyncd SubState)
cxvm_result upgrade_ms $((t_unpack + t_configure))
cxvm_log "U: after --configure: $state_u, main PID $pid_old -> $pid_new, io.max '$after_configure'," \
	"sync still waiting: $syncing"
ceiling_after=$(show_knob /throttled.slice boost_ceiling)
isolate_after=$(show_knob /system.slice sync_isolation)
# The new daemon picks up the sync that waits since before its start (trace_detector.cpp
# rescanProc) and boosts it again. The rest of that sync is not needed: systemd lifts the
# slice's limit (the daemon keeps "their value" and drops its record), then puts it back.
reboosted=$(journalctl -q -o cat _PID="$pid_new" | grep -c '^boost /throttled.slice ')
# (systemd 252 does not take "max" here.)
systemctl set-property --runtime "$SD_SLICE" "IOWriteBandwidthMax=$CXVM_SCRATCH_DEV 1G"
wait $spid
t_sync_u=$(((${EPOCHREALTIME/./} - since_u) / 1000))
systemctl set-property --runtime "$SD_SLICE" "IOWriteBandwidthMax=$CXVM_SCRATCH_DEV $LIMIT"
sd_wait_io_max "$ORIG" 10 || cxvm_fail "U: a limit stays lifted after the upgrade: '$(sd_io_max)'"
# How the old daemon's boost ended at its stop: a restore (reason shutdown) or, when the
# postinst's daemon-reload had already made systemd rewrite the slice's io.max (to its
# configured limit), "changed by someone else ... keeping their value". Both leave the limit,
# never a lift.
old_log=$(journalctl -q -o cat _PID="$pid_old" --since "@$((since_u / 1000000))")
grep -E '^(boost|restore) |someone else|Terminated|shutdown' <<<"$old_log"
stop_log=$(sed -n '/received Terminated/,$p' <<<"$old_log")
restored_on_stop=$(grep -cE "^restore /throttled.slice .*\(shutdown\)|^io.max of /throttled.slice .* it now holds ${ORIG#* }; keeping their value" <<<"$stop_log")
lifted_on_stop=$(grep -cE 'action=shutdown-lift|system is shutting down' <<<"$old_log")
journal_u=$(</run/cxiosync/boosts.json)
conf_kept=$(md5sum -c --status <<<"$conf_md5" && echo yes || echo no)
leftovers=$(find /etc/cxiosync -name '*.dpkg-*' | tr '\n' ' ')
cxvm_result_str status_upgraded "$(pkg_status)"
cxvm_result_str upgrade_state "$state_u"
cxvm_result upgrade_pid_changed "$([ "$pid_new" != "$pid_old" ] && echo true || echo false)"
cxvm_result_str upgrade_io_max_boosted "$boosted_u"
cxvm_result_str upgrade_io_max_after_configure "$after_configure"
cxvm_result_str upgrade_sync_waiting_after_configure "$syncing"
cxvm_result upgrade_sync_ms "$t_sync_u"
cxvm_result upgrade_new_daemon_boosts "$reboosted"
cxvm_result upgrade_old_boost_ended_on_stop "$restored_on_stop"
cxvm_result_str upgrade_old_daemon_stop "$(grep -E '^restore |someone else' <<<"$stop_log")"
cxvm_result upgrade_lifted_on_stop "$lifted_on_stop"
cxvm_result_str upgrade_journal_after "$journal_u"
cxvm_result_str upgrade_ceiling "$ceiling_before -> $ceiling_after"
cxvm_result_str upgrade_isolation "$isolate_before -> $isolate_after"
cxvm_result_str upgrade_conffile_edit_kept "$conf_kept"
cxvm_log "U: sync took $t_sync_u ms; old daemon: $restored_on_stop restore(s) on stop, $lifted_on_stop" \
	"shutdown lift(s); journal $journal_u; ceiling '$ceiling_after', isolation '$isolate_after'," \
	"conffile edit kept: $conf_kept"
[ "$(pkg_status)" = "install ok installed $new_version" ] || cxvm_fail "U: dpkg says '$(pkg_status)'"
[ "$state_u" = active/running ] || cxvm_fail "U: cxiosyncd is $state_u after the upgrade"
[ "$pid_new" != "$pid_old" ] || cxvm_fail "U: the service was not restarted (main PID $pid_old)"
[ "$restored_on_stop" -ge 1 ] ||
	cxvm_fail "U: the old daemon's stop did not end a boost (the sync had ended?); retry or raise SD_PKG_MIB"
[ "$lifted_on_stop" -eq 0 ] || cxvm_fail "U: the old daemon lifted limits as if the system were shutting down"
[[ "$journal_u" == *'"boosts":[]'* ]] || cxvm_fail "U: boost journal not empty: $journal_u"
[ "$ceiling_after" = "$ceiling_before" ] || cxvm_fail "U: persistent runtime setting lost: '$ceiling_after'"
[ "$isolate_after" = "$isolate_before" ] || cxvm_fail "U: --runtime setting lost: '$isolate_after'"
[ "$conf_kept" = yes ] || cxvm_fail "U: the admin's edit of $CONF is gone"
[ -z "$leftovers" ] || cxvm_fail "U: dpkg left $leftovers (a conffile prompt?)"
systemctl stop cxvm-pkg-dirty.service

# ---- R. remove -------------------------------------------------------------------------------
files=$(dpkg-query -L cxiosync) || cxvm_fail "dpkg-query -L failed"
dpkg_timed t_remove remove -r cxiosync
state_r=$(sd_prop cxiosyncd ActiveState)
load_r=$(sd_prop cxiosyncd LoadState)
gone_r='' kept_r=''
for f in /usr/sbin/cxiosyncd /usr/bin/cxiosyncctl /lib/systemd/system/cxiosyncd.service \
	/usr/share/dbus-1/system-services/org.cxiosync1.service; do
	[ -e "$f" ] && cxvm_fail "R: $f is still there"
	gone_r+="$f "
done
for f in "$CONF" "$ADMIN_YAML" "$ADMIN_DROPIN" /var/lib/cxiosync/runtime-policy.json; do
	[ -e "$f" ] || cxvm_fail "R: $f is gone"
	kept_r+="$f "
done
cxvm_result_str status_removed "$(pkg_status)"
cxvm_result_str remove_service "$state_r/$load_r"
cxvm_result_str remove_gone "$gone_r"
cxvm_result_str remove_kept "$kept_r"
cxvm_result_str remove_io_max "$(sd_io_max)"
cxvm_log "R: dpkg: '$(pkg_status)'; cxiosyncd $state_r/$load_r; gone: $gone_r; kept: $kept_r"
[ "$(pkg_status)" = "deinstall ok config-files $new_version" ] || cxvm_fail "R: dpkg says '$(pkg_status)'"
[ "$state_r" = inactive ] || cxvm_fail "R: cxiosyncd is $state_r"
[ "$(sd_io_max)" = "$ORIG" ] || cxvm_fail "R: io.max '$(sd_io_max)' != '$ORIG'"

# ---- P. purge ---------------------------------------------------------------------------------
dpkg_timed t_purge purge -P cxiosync
left=
while read -r f; do
	# Directories shared with other packages (/usr, /etc, ...) stay; ours must be gone unless
	# they hold the admin's files.
	case "$f" in
	/etc/cxiosync | /etc/cxiosync/cxiosync.d) continue ;;
	*cxiosync*) ;;
	*) [ -d "$f" ] && continue ;;
	esac
	[ "$f" = "$CONF" ] && continue
	[ -e "$f" ] || [ -L "$f" ] && left+="$f "
done <<<"$files"
for f in /run/cxiosync /var/lib/cxiosync /etc/systemd/system/multi-user.target.wants/cxiosyncd.service \
	/var/lib/systemd/deb-systemd-helper-enabled/cxiosyncd.service.dsh-also; do
	[ -e "$f" ] || [ -L "$f" ] && left+="$f "
done
kept_p=
for f in "$ADMIN_YAML" "$ADMIN_DROPIN"; do
	[ -e "$f" ] || cxvm_fail "P: the admin's $f is gone"
	kept_p+="$f "
done
conf_p=$([ -e "$CONF" ] && echo kept || echo deleted)
cxvm_result_str status_purged "$(pkg_status)"
cxvm_result_str purge_left "$left"
cxvm_result_str purge_kept "$kept_p"
cxvm_result_str conffile_edited_after_purge "$conf_p"
fragment_p=$(sd_prop cxiosyncd FragmentPath)
cxvm_result_str purge_unit_fragment "$fragment_p"
cxvm_log "P: dpkg: '$(pkg_status)'; left: '${left:-nothing}'; kept: $kept_p; edited $CONF: $conf_p"
[ -z "$(pkg_status)" ] || [[ "$(pkg_status)" == "unknown ok not-installed"* ]] ||
	cxvm_fail "P: dpkg says '$(pkg_status)'"
[ -z "$left" ] || cxvm_fail "P: left behind: $left"
[ "$conf_p" = deleted ] || cxvm_fail "P: the edited $CONF survived the purge (dpkg's behaviour changed? see docs/user-guide.md §2)"
[ -z "$fragment_p" ] || cxvm_fail "P: systemd still loads cxiosyncd.service from $fragment_p"
rm -f "$ADMIN_YAML" "$ADMIN_DROPIN"
cxvm_log "ok: upgrade $((t_unpack + t_configure)) ms, remove $t_remove ms, purge $t_purge ms"
