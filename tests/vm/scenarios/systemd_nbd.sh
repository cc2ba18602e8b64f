# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 17 item 6 under systemd as PID 1 (vmrun.py --init=systemd): the nbd loop backend from
# the INSTALLED package, through the unit's sandbox. Runs after systemd_pid1 (which installed
# the .deb with dpkg -i) and before systemd_package (which removes it):
#   `cxiosyncctl loop add FILE --backend nbd --workers 4`: the package's
#   /usr/libexec/cxiosync/cxiosync-nbd-server is spawned by the daemon inside the unit
#   (DeviceAllow=block-nbd, CAP_SYS_ADMIN for the nbd ioctls, the nbd module loaded by
#   ExecStartPre); the worker count read back through D-Bus (list, show, JSON) and from the
#   kernel (one socket per worker in the server); data written through /dev/nbdN reads back from
#   the file; SetWorkers answers NotSupported; detach stops the server; the daemon stays up.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/systemd_common.inc"

finish() { journalctl -q -u cxiosyncd -o short-monotonic >"$CXVM_OUT/cxiosyncd.journal" 2>&1; }
trap finish EXIT

sd_install_deb
systemctl is-active --quiet cxiosyncd || systemctl start cxiosyncd || cxvm_fail "cxiosyncd does not start"
server=/usr/libexec/cxiosync/cxiosync-nbd-server
[ -x "$server" ] || cxvm_fail "$server is not installed"
dpkg -S "$server" >/dev/null 2>&1 && cxvm_result_str nbd_server_owner "$(dpkg -S "$server")"
pid_daemon=$(sd_prop cxiosyncd MainPID)

img=${CXVM_SCRATCH_MNT:-/run}/cxvm-sd-nbd.img
rm -f "$img"
truncate -s 64M "$img"
out=$(cxiosyncctl loop add "$img" --backend nbd --workers 4 --json=short) || {
	systemctl status --no-pager cxiosyncd | tail -5
	cxvm_fail "loop add --backend nbd --workers 4: $out"
}
cxvm_log "loop add: $out"
name=$(jq -r .name <<<"$out")
[[ $name == nbd[0-9]* ]] || cxvm_fail "not an nbd device: '$name'"
dev=/dev/$name
[ "$(jq -r .backend <<<"$out")" = nbd ] || cxvm_fail "backend $(jq -r .backend <<<"$out")"
[ "$(jq -r .workers <<<"$out")" = 4 ] || cxvm_fail "workers in the reply: $(jq -r .workers <<<"$out")"
shown=$(cxiosyncctl loop show "$name" --json=short | jq -r .workers)
cxvm_result workers_shown "$shown"
[ "$shown" = 4 ] || cxvm_fail "loop show: workers $shown"
listed=$(cxiosyncctl loop list --json=short | jq -r ".[] | select(.name == \"$name\") | .workers")
[ "$listed" = 4 ] || cxvm_fail "loop list: workers '$listed'"
cxiosyncctl loop list | grep -E "^$dev .* nbd +4 " || {
	cxiosyncctl loop list
	cxvm_fail "loop list's text has no '$dev ... nbd 4' row"
}
# The kernel's side: the device is connected and its server (a child of the daemon, in the
# unit's cgroup) holds one socket per worker.
[ -e /sys/block/$name/pid ] || cxvm_fail "$name is not connected"
spid=$(pgrep -f -n "^$server") || cxvm_fail "no $server process"
grep -q "cxiosyncd.service" /proc/$spid/cgroup || cxvm_fail "the server is not in cxiosyncd.service: $(cat /proc/$spid/cgroup)"
socks=0
for f in /proc/$spid/fd/*; do [[ $(readlink "$f") == socket:* ]] && socks=$((socks + 1)); done
cxvm_result server_sockets "$socks"
[ "$socks" = 4 ] || cxvm_fail "server sockets $socks, not 4"

head -c 4M /dev/urandom >/tmp/cxvm-nbd-data
dd if=/tmp/cxvm-nbd-data of="$dev" bs=1M oflag=direct status=none || cxvm_fail "write through $dev"
got=$(head -c 4M "$dev" | md5sum)
[ "$got" = "$(md5sum </tmp/cxvm-nbd-data)" ] || cxvm_fail "data read back through $dev differs"

set_out=$(cxiosyncctl loop set "$name" --workers 2 2>&1)
rc=$?
cxvm_log "loop set --workers 2: exit $rc: $set_out"
[ $rc = 1 ] || cxvm_fail "loop set --workers on nbd: exit $rc"
grep -q "worker count" <<<"$set_out" || cxvm_fail "no reason given: $set_out"

cxiosyncctl loop detach "$name" || cxvm_fail "detach $name"
for _ in $(seq 50); do [ -e /sys/block/$name/pid ] || break; sleep 0.1; done
[ -e /sys/block/$name/pid ] && cxvm_fail "$name still connected after detach"
kill -0 "$spid" 2>/dev/null && cxvm_fail "server $spid still running after detach"
cmp -n 4194304 /tmp/cxvm-nbd-data "$img" || cxvm_fail "the backing file does not hold the data"
[ "$(sd_prop cxiosyncd MainPID)" = "$pid_daemon" ] || cxvm_fail "cxiosyncd restarted meanwhile"
rm -f "$img" /tmp/cxvm-nbd-data
cxvm_result_str nbd_backend "ok"
