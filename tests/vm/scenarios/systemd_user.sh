# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 18 item 7 under systemd as PID 1: `cxiosyncctl --user` names units of a user manager
# (user@UID.service). A user with a running manager starts a transient service in a slice of
# its own; cxiosyncctl resolves it by asking that manager over its private socket (as the user,
# and as root with --user=UID), maps user slices under user@UID.service, and policy set
# through a user slice name lands on that cgroup in the daemon. Runs after systemd_pid1
# (or installs the package itself).
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/systemd_common.inc"

U=cxvmuser
UID_=4242
UCG=/user.slice/user-$UID_.slice/user@$UID_.service
cleanup() {
	cxiosyncctl -q reset "$UCG/cxvmbatch.slice" >/dev/null 2>&1
	systemctl stop "user@$UID_.service" 2>/dev/null
}
trap cleanup EXIT

sd_install_deb
systemctl is-active --quiet cxiosyncd || systemctl start cxiosyncd || cxvm_fail "cannot start cxiosyncd"
id "$U" >/dev/null 2>&1 || useradd -M -u "$UID_" -d /nonexistent -s /bin/sh "$U" ||
	cxvm_fail "useradd failed"
systemctl start "user@$UID_.service" || cxvm_fail "cannot start user@$UID_.service"
as_user() { runuser -u "$U" -- env XDG_RUNTIME_DIR=/run/user/$UID_ "$@"; }
as_user systemd-run --user --quiet --unit=cxvm-user-batch --slice=cxvmbatch.slice sleep 600 ||
	cxvm_fail "systemd-run --user failed"

# cgroup_of WHO ARGS...: the "cgroup" cxiosyncctl --json show prints (WHO: user or root).
cgroup_of() {
	local who=$1 out
	shift
	if [ "$who" = user ]; then
		out=$(as_user cxiosyncctl --json=short show "$@") || return 1
	else
		out=$(cxiosyncctl --json=short show "$@") || return 1
	fi
	printf '%s' "$out" | jq -r .cgroup
}
want="$UCG/cxvmbatch.slice/cxvm-user-batch.service"
[ -d "/sys/fs/cgroup$want" ] || cxvm_fail "the user service is not at $want: $(find /sys/fs/cgroup/user.slice -name 'cxvm-user-batch*')"
got=$(cgroup_of user --user cxvm-user-batch.service 2>"$CXVM_OUT/user.err") ||
	cxvm_fail "as the user: show --user failed: $(cat "$CXVM_OUT/user.err")"
[ "$got" = "$want" ] || cxvm_fail "as the user: --user cxvm-user-batch.service is '$got', not '$want'"
[ -s "$CXVM_OUT/user.err" ] && cxvm_fail "as the user: a note although the manager answered: $(cat "$CXVM_OUT/user.err")"
got=$(cgroup_of root --user=$UID_ cxvm-user-batch.service 2>"$CXVM_OUT/root.err") ||
	cxvm_fail "as root: show --user=$UID_ failed: $(cat "$CXVM_OUT/root.err")"
[ "$got" = "$want" ] || cxvm_fail "as root: --user=$UID_ cxvm-user-batch.service is '$got', not '$want'"
got=$(cgroup_of root --user=$U cxvmbatch.slice) || cxvm_fail "show --user=$U cxvmbatch.slice failed"
[ "$got" = "$UCG/cxvmbatch.slice" ] || cxvm_fail "--user=$U cxvmbatch.slice is '$got'"
got=$(cgroup_of root --user=$U -- -.slice) || cxvm_fail "show --user=$U -.slice failed"
[ "$got" = "$UCG" ] || cxvm_fail "--user=$U -.slice is '$got'"
# Without --user the same name is a system unit (there is none): an error, not a guess.
if cxiosyncctl show cxvm-user-batch.service >/dev/null 2>&1; then
	cxvm_fail "without --user, cxvm-user-batch.service resolved (it is a user unit)"
fi
# A user unit that is not running: the manager says so, with the path it will have.
msg=$(cxiosyncctl --user=$UID_ show cxvm-never.service 2>&1) && cxvm_fail "an unknown user unit resolved"
case $msg in *"not found"*) ;; *) cxvm_fail "unknown user unit: '$msg'" ;; esac

# Policy through the user slice's name reaches the daemon on that cgroup (the default is on).
cxiosyncctl -q --user=$UID_ isolate cxvmbatch.slice off --runtime || cxvm_fail "isolate --user failed"
iso=$(cxiosyncctl --json=short show "$UCG/cxvmbatch.slice" | jq -r '.policy.sync_isolation | "\(.value) \(.source)"')
cxvm_log "isolation of $UCG/cxvmbatch.slice after isolate --user ... off: '$iso'"
case $iso in "off "*) ;; *) cxvm_fail "isolate --user did not apply: show says '$iso'" ;; esac
cxvm_result_str user_unit_cgroup "$want"
cxvm_log "PASS: --user resolves user units (as the user and as root) and policy lands on them"
