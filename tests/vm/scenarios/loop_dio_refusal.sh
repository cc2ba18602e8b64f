# Backing file on tmpfs (no direct I/O on Linux 6.1): direct_io=on fails and leaves nothing;
# auto falls back to buffered and says why (reply, show, list); off is quietly buffered.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
cxl_no_leaks
img=/dev/shm/tmpfs.img
truncate -s 32M "$img"

if out=$(cxl --json add --direct-io=on "$img" 2>&1); then
	cxvm_fail "direct-io=on on tmpfs succeeded: $out"
fi
cxvm_log "ok: refused: $out"
grep -q "direct I/O" <<<"$out" || cxvm_fail "refusal does not say why: $out"
cxvm_result_str on_error "$out"
cxl_no_leaks

out=$(cxl --json add "$img") || cxvm_fail "auto: $out"
dev=$(jq -r .device.name <<<"$out")
cxl_expect "auto: dio" "$(cxl_sys "$dev" loop/dio)" 0
cxl_expect "auto: reply dio" "$(jq -r '."direct-io"' <<<"$out")" false
note=$(jq -r '."direct-io-note"' <<<"$out")
[ -n "$note" ] || cxvm_fail "auto fallback without a reason"
cxvm_log "ok: auto fell back: $note"
cxvm_result_str auto_note "$note"
cxl_expect "note in show" "$(cxl --json show "$dev" | jq -r '."direct-io-note"')" "$note"
cxl list | grep -q "direct I/O off" || cxvm_fail "list does not say direct I/O is off"
cxl_expect "no backing block device" "$(cxl --json show "$dev" | jq -r '."backing-dev"')" null
cxl detach "$dev" || cxvm_fail detach

dev=$(cxl add --direct-io=off "$img") || cxvm_fail "off"
cxl_expect "off: dio" "$(cxl_sys "$dev" loop/dio)" 0
cxl_expect "off: no note" "$(cxl --json show "$dev" | jq -r '."direct-io-note"')" ""
# Turning it on live is refused with a reason, and the device stays as it was.
if cxl set "$dev" --direct-io=on 2>/tmp/err; then cxvm_fail "live dio on tmpfs succeeded"; fi
cxvm_log "ok: live refusal: $(cat /tmp/err)"
cxl_expect "still bound" "$(cxl_sys "$dev" loop/backing_file)" "$img"
cxl detach "$dev" || cxvm_fail detach
cxl_no_leaks
cxvm_log ok
