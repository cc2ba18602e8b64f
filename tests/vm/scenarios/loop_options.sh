# SPDX-License-Identifier: GPL-2.0-or-later
# Loop setup with each option on an ext4 backing file; effective direct I/O read back; a
# read-only fd gives a read-only device; detach; no leaks.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
cxl_no_leaks
img=$CXVM_SCRATCH_MNT/disk.img
truncate -s 64M "$img"

# Defaults: direct I/O on, block size from the backing filesystem.
out=$(cxl --json add "$img") || cxvm_fail "add: $out"
dev=$(jq -r .device.name <<<"$out")
cxl_expect "default dio (sysfs)" "$(cxl_sys "$dev" loop/dio)" 1
cxl_expect "default dio (reply)" "$(jq -r '."direct-io"' <<<"$out")" true
cxl_expect "used LOOP_CONFIGURE" "$(jq -r '."used-loop-configure"' <<<"$out")" true
cxl_expect "block size = sysfs" "$(jq -r '."block-size"' <<<"$out")" "$(cxl_sys "$dev" queue/logical_block_size)"
cxl_expect "block size source" "$(jq -r '."block-size-source"' <<<"$out")" dio-align
cxl_expect "losetup agrees on dio" "$(losetup -l -J "$dev" | jq -r '.loopdevices[0].dio')" true
cxl_expect "backing dev" "$(jq -r '.device."backing-dev"' <<<"$out")" "$CXVM_SCRATCH_MAJMIN"
cxvm_result default "$(jq -c '{dio: ."direct-io", bs: ."block-size", src: ."block-size-source"}' <<<"$out")"
# It works: a filesystem on it, data through it.
mkfs.ext4 -q -F "$dev" || cxvm_fail "mkfs on $dev"
mkdir -p /tmp/m && mount "$dev" /tmp/m || cxvm_fail "mount $dev"
dd if=/dev/urandom of=/tmp/m/f bs=1M count=8 status=none && sync
sum1=$(md5sum </tmp/m/f)
umount /tmp/m && mount "$dev" /tmp/m && sum2=$(md5sum </tmp/m/f) && umount /tmp/m
cxl_expect "data survives remount" "$sum2" "$sum1"
cxl detach "$dev" || cxvm_fail "detach $dev"
[ -e "/sys/block/${dev#/dev/}/loop" ] && cxvm_fail "$dev still bound after detach"

# Every option at once.
out=$(cxl --json add --offset 1M --size 16M --block-size 4096 --partscan --read-only \
	--direct-io=on "$img") || cxvm_fail "add with options: $out"
dev=$(jq -r .device.name <<<"$out")
cxl_expect offset "$(cxl_sys "$dev" loop/offset)" 1048576
cxl_expect sizelimit "$(cxl_sys "$dev" loop/sizelimit)" 16777216
cxl_expect partscan "$(cxl_sys "$dev" loop/partscan)" 1
cxl_expect ro "$(cxl_sys "$dev" ro)" 1
cxl_expect block_size "$(cxl_sys "$dev" queue/logical_block_size)" 4096
cxl_expect dio "$(cxl_sys "$dev" loop/dio)" 1
cxl_expect size "$(cxl_sys "$dev" size)" 32768
cxl_expect "show foreign" "$(cxl --json show "$dev" | jq -r .foreign)" false
cxl detach "$dev" || cxvm_fail "detach $dev"

# Buffered on request.
dev=$(cxl add --direct-io=off "$img") || cxvm_fail "add off"
cxl_expect "dio off" "$(cxl_sys "$dev" loop/dio)" 0
# Live changes.
cxl set "$dev" --direct-io=on >/dev/null || cxvm_fail "set --direct-io=on"
cxl_expect "live dio on" "$(cxl_sys "$dev" loop/dio)" 1
cxl set "$dev" --block-size 4096 >/dev/null || cxvm_fail "set --block-size"
cxl_expect "live block size" "$(cxl_sys "$dev" queue/logical_block_size)" 4096
truncate -s 96M "$img"
cxl set "$dev" --capacity >/dev/null || cxvm_fail "set --capacity"
cxl_expect "capacity" "$(cxl_sys "$dev" size)" 196608
cxl set "$dev" --direct-io=off >/dev/null || cxvm_fail "set --direct-io=off"
cxl_expect "live dio off" "$(cxl_sys "$dev" loop/dio)" 0
cxl detach "$dev" || cxvm_fail "detach"

# A read-only fd never yields a writable device (read-only not asked for).
out=$(cxl --json add --fd-read-only "$img") || cxvm_fail "add --fd-read-only: $out"
dev=$(jq -r .device.name <<<"$out")
cxl_expect "ro from read-only fd" "$(cxl_sys "$dev" ro)" 1
jq -e '.notes[] | select(test("read-only"))' <<<"$out" >/dev/null || cxvm_fail "no read-only note"
if dd if=/dev/zero of="$dev" bs=4k count=1 oflag=direct status=none 2>/dev/null; then
	cxvm_fail "wrote to a device made from a read-only fd"
fi
cxvm_log "ok: write to $dev refused"
cxl detach "$dev" || cxvm_fail "detach"
cxl_expect "state file empty" "$(jq '.loops | length' "$CXL_RUN/loops.json")" 0
cxl_no_leaks
cxvm_log ok
