# SPDX-License-Identifier: GPL-2.0-or-later
# Backing file on ramfs (no direct I/O on any kernel: no direct_IO / FMODE_CAN_ODIRECT):
# direct_io=on fails and leaves nothing; auto falls back to buffered and says why (reply,
# show, list); off is quietly buffered.
# Then tmpfs, where the kernels differ: tmpfs refuses O_DIRECT before Linux 6.6 and supports
# it since (6.1: refused, 6.12: on). The daemon must do what the kernel can, so the expected
# outcome comes from the kernel version and is checked against a plain O_DIRECT probe.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
cxl_no_leaks
mkdir -p /tmp/ramfs && mount -t ramfs none /tmp/ramfs || cxvm_fail "mount ramfs"
img=/tmp/ramfs/ramfs.img
truncate -s 32M "$img"
if dd if=/dev/zero of="$img" bs=4096 count=1 oflag=direct conv=notrunc status=none 2>/dev/null; then
	cxvm_fail "ramfs accepted O_DIRECT on $CXVM_KERNEL: this scenario needs a filesystem that refuses it"
fi

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
umount /tmp/ramfs

# tmpfs: O_DIRECT since Linux 6.6 (shmem sets FMODE_CAN_ODIRECT).
timg=/dev/shm/tmpfs.img
truncate -s 32M "$timg"
kmaj=${CXVM_KERNEL%%.*} kmin=${CXVM_KERNEL#*.} && kmin=${kmin%%.*}
if [ "$kmaj" -gt 6 ] || { [ "$kmaj" = 6 ] && [ "$kmin" -ge 6 ]; }; then want=on; else want=refused; fi
if dd if=/dev/zero of="$timg" bs=4096 count=1 oflag=direct conv=notrunc status=none 2>/dev/null; then
	probe=on
else
	probe=refused
fi
cxl_expect "tmpfs O_DIRECT on $CXVM_KERNEL" "$probe" "$want"
cxvm_result_str tmpfs_o_direct "$probe"
if out=$(cxl --json add --direct-io=on "$timg" 2>&1); then
	dev=$(jq -r .device.name <<<"$out")
	cxl_expect "tmpfs direct-io=on on $CXVM_KERNEL" on "$want"
	cxl_expect "tmpfs: dio" "$(cxl_sys "$dev" loop/dio)" 1
	cxl_expect "tmpfs: no note" "$(jq -r '."direct-io-note"' <<<"$out")" ""
	cxl detach "$dev" || cxvm_fail detach
else
	cxl_expect "tmpfs direct-io=on on $CXVM_KERNEL ($out)" refused "$want"
fi
cxl_no_leaks
cxvm_log ok
