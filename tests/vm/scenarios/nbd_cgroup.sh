# SPDX-License-Identifier: GPL-2.0-or-later
# Whose cgroup pays for nbd backing I/O (issue 17 item 5). A tenant cgroup has io.max
# wbps=1 MiB/s on the scratch disk; a process in it sets up an nbd device over a file on that
# disk through cxiosyncd on a real system bus (cxiosyncctl loop add --backend nbd), and 8 MiB
# are written through the device with O_DIRECT + fsync:
#   --server-cgroup caller: the server starts in the tenant's cgroup (clone3
#     CLONE_INTO_CGROUP), its backing writes are charged there: <= ~1.5 MiB/s;
#   --server-cgroup daemon: the server runs in the daemon's cgroup, the limit does not apply.
# Both throughputs are printed and go to result.json; also checked: the server's cgroup in
# /proc, in `loop show` (text and JSON), in `loop list --json`, the ServerCgroup D-Bus
# property, the record in nbd.json, and the tenant's io.stat (the bytes are charged there).
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
. "$CXVM_DIR/scenarios/nbd_lib.inc"
. "$CXVM_DIR/scenarios/daemon_common.inc"

CTL=$CXIOSYNC_BUILD_DIR/dbus/cxiosyncctl
[ -x "$CTL" ] || cxvm_fail "no cxiosyncctl at $CTL"
MIB=8
LIMIT_BPS=1048576

nbd_no_leaks
mkdir -p /run/dbus /usr/share/dbus-1/system.d
cp "$CXIOSYNC_SOURCE_DIR/packaging/org.cxiosync1.conf" /usr/share/dbus-1/system.d/ ||
	cxvm_fail "cannot install the bus policy"
dbus-daemon --system --fork --print-pid=3 3>/tmp/nbdcg-dbus.pid || cxvm_fail "dbus-daemon did not start"
for i in $(seq 100); do
	[ -S /run/dbus/system_bus_socket ] && break
	sleep 0.1
done
stop_bus() {
	cxd_stop
	kill "$(cat /tmp/nbdcg-dbus.pid)" 2>/dev/null
	rm -f /run/dbus/system_bus_socket /run/dbus/pid
}

cxvm_cgroup_setup
cxvm_cg_create tenant
cxvm_io_max tenant "wbps=$LIMIT_BPS"
# The daemon must not lift the tenant's limit (a boost) while the test measures it.
cxd_config <<'YAML'
cgroups:
  /tenant:
    boost: deny
YAML
cxd_start --bus=system --state-dir=/tmp/nbdcg-state
grep -q 'D-Bus API: org.cxiosync1 on the system bus' "$CXD_LOG" ||
	{ tail -20 "$CXD_LOG"; cxvm_fail "cxiosyncd did not take org.cxiosync1"; }
daemon_cg=$(sed -n 's/^0:://p' /proc/$CXD_PID/cgroup)
img=$CXVM_SCRATCH_MNT/nbdcg.img
truncate -s 64M "$img"

# run_mode caller|daemon: sets up the device from inside the tenant, checks where the server
# runs, writes $MIB MiB through it and sets $mibps (MiB/s, 2 decimals) and $charged (bytes
# the tenant's io.stat gained on the scratch disk).
run_mode() {
	local mode=$1 out dev name pid want ms before after
	out=$(cxvm_cg_run tenant "$CTL" --no-ask-password --json=short loop add "$img" --backend nbd \
		--workers 2 --server-cgroup "$mode" 2>&1) || cxvm_fail "loop add ($mode): $out"
	dev=$(jq -r .device <<<"$out") || cxvm_fail "loop add reply ($mode): $out"
	name=${dev#/dev/}
	pid=$(jq -r --arg d "$name" '.nbd[] | select(.device == $d) | .server_pid' "$CXL_RUN/nbd.json")
	case $mode in caller) want=/tenant ;; daemon) want=$daemon_cg ;; esac
	cxl_expect "server $pid in /proc ($mode)" "$(sed -n 's/^0:://p' /proc/$pid/cgroup)" "$want"
	cxl_expect "nbd.json server_cgroup ($mode)" \
		"$(jq -r --arg d "$name" '.nbd[] | select(.device == $d) | .server_cgroup' "$CXL_RUN/nbd.json")" "$want"
	cxl_expect "nbd.json server_cgroup_mode ($mode)" \
		"$(jq -r --arg d "$name" '.nbd[] | select(.device == $d) | .server_cgroup_mode' "$CXL_RUN/nbd.json")" "$mode"
	cxl_expect "loop show --json ($mode)" "$("$CTL" --json=short loop show "$name" | jq -r .server_cgroup)" "$want"
	"$CTL" --no-pager loop show "$name" | grep -q "Server cgroup.*$want" ||
		cxvm_fail "loop show has no 'Server cgroup $want' line: $("$CTL" --no-pager loop show "$name")"
	cxl_expect "loop list --json ($mode)" \
		"$("$CTL" --json=short loop list | jq -r --arg d "$dev" '.[] | select(.device == $d) | .server_cgroup')" "$want"
	cxl_expect "ServerCgroup property ($mode)" \
		"$(busctl --system get-property org.cxiosync1 /org/cxiosync1/loop/$name org.cxiosync1.Loop ServerCgroup)" \
		"s \"$want\""
	"$CTL" --no-pager loop show "$name" >>"$CXVM_OUT/show.txt"
	before=$(cxvm_iostat tenant wbytes)
	cxvm_time_ms ms cxvm_cg_run tenant dd if=/dev/zero of="$dev" bs=1M count=$MIB oflag=direct conv=fsync \
		status=none || cxvm_fail "write through $dev ($mode)"
	after=$(cxvm_iostat tenant wbytes)
	charged=$((after - before))
	mibps=$(awk -v m=$MIB -v ms="$ms" 'BEGIN { printf "%.2f", m * 1000 / ms }')
	cxvm_log "server_cgroup=$mode: $MIB MiB through $dev in $ms ms = $mibps MiB/s;" \
		"tenant io.stat wbytes +$charged on the scratch disk (io.max wbps=$LIMIT_BPS)"
	"$CTL" loop detach "$name" >/dev/null || cxvm_fail "detach $name ($mode)"
	cxvm_result "${mode}_ms" "$ms"
	cxvm_result "${mode}_mibps" "$mibps"
	cxvm_result "${mode}_tenant_wbytes" "$charged"
}

run_mode caller
caller_mibps=$mibps caller_charged=$charged
run_mode daemon
daemon_mibps=$mibps daemon_charged=$charged
cxvm_log "throughput: server_cgroup=caller $caller_mibps MiB/s, server_cgroup=daemon $daemon_mibps MiB/s (limit 1 MiB/s)"
awk -v c="$caller_mibps" 'BEGIN { exit !(c <= 1.5) }' ||
	cxvm_fail "server_cgroup=caller: $caller_mibps MiB/s, the tenant's 1 MiB/s limit did not hold"
awk -v d="$daemon_mibps" 'BEGIN { exit !(d > 2.0) }' ||
	cxvm_fail "server_cgroup=daemon: $daemon_mibps MiB/s, expected clearly above the tenant's limit"
[ "$caller_charged" -ge $((MIB * 1048576)) ] ||
	cxvm_fail "caller: the tenant was charged only $caller_charged bytes of $MIB MiB"
[ "$daemon_charged" -lt 1048576 ] ||
	cxvm_fail "daemon: the tenant was charged $daemon_charged bytes (the server is not in it)"

# The default for a non-root caller is its own cgroup. polkit (D-Bus activated) lets uid
# 65534 set up loop devices through a rule; the backing file is its own.
mkdir -p /usr/share/polkit-1/actions /etc/polkit-1/rules.d
cp "$CXIOSYNC_SOURCE_DIR/packaging/org.cxiosync1.policy" /usr/share/polkit-1/actions/
cat >/etc/polkit-1/rules.d/10-nbdcg-test.rules <<'JS'
polkit.addRule(function(action, subject) {
  if (action.id == "org.cxiosync1.loop-setup" && subject.user == "nobody")
    return polkit.Result.YES;
});
JS
img2=$CXVM_SCRATCH_MNT/nbdcg-nobody.img
truncate -s 16M "$img2" && chown 65534:65534 "$img2"
out=$(cxvm_cg_run tenant setpriv --reuid=65534 --regid=65534 --clear-groups -- "$CTL" \
	--no-ask-password --json=short loop add "$img2" --backend nbd 2>&1) ||
	cxvm_fail "non-root loop add (default server_cgroup): $out"
name=$(jq -r .name <<<"$out")
cxl_expect "non-root caller: default server cgroup (reply)" "$(jq -r .server_cgroup <<<"$out")" /tenant
cxl_expect "non-root caller: nbd.json server_cgroup_mode" \
	"$(jq -r --arg d "$name" '.nbd[] | select(.device == $d) | .server_cgroup_mode' "$CXL_RUN/nbd.json")" caller
cxl_expect "non-root caller: setup_by_uid" "$(jq -r .setup_by_uid <<<"$out")" 65534
"$CTL" loop detach "$name" >/dev/null || cxvm_fail "detach $name (non-root's)"
rm -f /etc/polkit-1/rules.d/10-nbdcg-test.rules "$img2"

stop_bus
nbd_no_leaks
rm -f "$img"
cxvm_result "ok" true
