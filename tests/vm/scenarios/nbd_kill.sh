# SPDX-License-Identifier: GPL-2.0-or-later
# Killing the server of an nbd multi-worker device: I/O fails within the timeout (never a
# hang), list/show report the dead server, detach clears it, nothing leaks.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
. "$CXVM_DIR/scenarios/nbd_lib.inc"
img=$CXVM_SCRATCH_MNT/nbd.img
truncate -s 64M "$img"
timeout_s=10
out=$(cxl --json add --backend nbd --workers 4 --nbd-timeout $timeout_s "$img") || cxvm_fail "add: $out"
dev=$(jq -r .device.name <<<"$out")
pid=$(jq -r '.device."server-pid"' <<<"$out")
dd if=/dev/zero of="$dev" bs=1M count=4 oflag=direct status=none || cxvm_fail "write before kill"
# A reader that keeps the device busy while the server dies.
(dd if="$dev" of=/dev/null bs=64k iflag=direct 2>/tmp/dd1.err; echo $? >/tmp/dd1.rc) &
sleep 1
kill -KILL "$pid"
t0=$(cxvm_now_ms)
# Fresh I/O after the kill must fail, and fast (bounded by the timeout, plus slack for TCG).
if timeout $((timeout_s * 3 + 30)) dd if="$dev" of=/dev/null bs=4k count=1 skip=100 iflag=direct status=none 2>/tmp/dd2.err; then
	cxvm_fail "read after the server was killed succeeded"
fi
rc=$?
t1=$(cxvm_now_ms)
[ $rc = 124 ] && cxvm_fail "read after kill hung (killed by timeout)"
cxvm_log "ok: read after kill failed in $((t1 - t0)) ms: $(head -c 200 /tmp/dd2.err)"
cxvm_result io_error_ms $((t1 - t0))
for ((k = 0; k < 300; k++)); do [ -f /tmp/dd1.rc ] && break; sleep 0.1; done
[ -f /tmp/dd1.rc ] || cxvm_fail "the reader running during the kill hangs"
[ "$(cat /tmp/dd1.rc)" != 0 ] || cxvm_log "note: the running reader finished before the kill"
cxvm_log "ok: running reader ended (rc $(cat /tmp/dd1.rc)): $(head -c 200 /tmp/dd1.err)"
show=$(cxl --json show "$dev") || cxvm_fail "show after kill: $show"
cxl_expect "server-alive after kill" "$(jq -r '."server-alive"' <<<"$show")" false
cxvm_log "show note: $(jq -r .note <<<"$show")"
cxl list | grep "$dev" | grep -qi dead || cxvm_fail "list does not report the dead server: $(cxl list)"
cxl detach "$dev" >/dev/null || cxvm_fail "detach after kill"
nbd_no_leaks
cxl_no_leaks
cxvm_log ok
