# SPDX-License-Identifier: GPL-2.0-or-later
# Workers/backend/queue-depth options: kernel loop queue depth applied at setup and live and
# read back; bad values refused with clear errors; the auto rule; nbd workers not settable at
# runtime (said clearly); the kernel loop has no worker count (said clearly); backends
# detected (ublk: no module on Debian's 6.1, a module on 6.12); auto on ramfs and tmpfs.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
. "$CXVM_DIR/scenarios/nbd_lib.inc"
img=$CXVM_SCRATCH_MNT/disk.img
truncate -s 64M "$img"
hw=$(cat /sys/module/loop/parameters/hw_queue_depth)
cxvm_result hw_queue_depth "$hw"

out=$(cxl --json add --queue-depth 32 "$img") || cxvm_fail "add --queue-depth 32: $out"
dev=$(jq -r .device.name <<<"$out")
cxl_expect "nr_requests at setup" "$(cxl_sys "$dev" queue/nr_requests)" 32
cxl_expect "queue-depth in reply" "$(jq -r '.device."queue-depth"' <<<"$out")" 32
cxl_expect "backend kernel" "$(jq -r .device.backend <<<"$out")" kernel
cxl_expect "workers kernel" "$(jq -r .device.workers <<<"$out")" 1
cxl set "$dev" --queue-depth 8 >/dev/null || cxvm_fail "set --queue-depth 8"
cxl_expect "nr_requests live" "$(cxl_sys "$dev" queue/nr_requests)" 8
cxl_expect "show queue-depth" "$(cxl --json show "$dev" | jq -r '."queue-depth"')" 8
cxl show "$dev" | grep -qi "queue depth 8" || cxvm_fail "show text lacks queue depth: $(cxl show "$dev")"
cxl list | grep "$dev" | grep -q kernel || cxvm_fail "list lacks backend"
if msg=$(cxl set "$dev" --queue-depth $((hw + 1)) 2>&1); then cxvm_fail "queue depth above hw_queue_depth accepted"; fi
grep -q hw_queue_depth <<<"$msg" || cxvm_fail "unclear error: $msg"
cxvm_log "ok: refused: $msg"
if msg=$(cxl set "$dev" --workers 4 2>&1); then cxvm_fail "workers on a kernel loop accepted"; fi
grep -q "no worker count" <<<"$msg" || cxvm_fail "unclear error: $msg"
cxvm_log "ok: refused: $msg"
cxl detach "$dev" >/dev/null || cxvm_fail detach
# nr_requests survives a detach in the kernel: the next device must not inherit it.
cxl_expect "kernel keeps nr_requests after detach" "$(cxl_sys "$dev" queue/nr_requests)" 8
dev2=$(cxl add "$img") || cxvm_fail "add after queue depth"
cxl_expect "same loop device reused" "$dev2" "$dev"
cxl_expect "default depth restored" "$(cxl_sys "$dev2" queue/nr_requests)" "$hw"
cxl detach "$dev2" >/dev/null || cxvm_fail detach

for bad in 0 17 -1 four 4x ""; do
	if msg=$(cxl add --backend nbd --workers "$bad" "$img" 2>&1); then cxvm_fail "--workers '$bad' accepted"; fi
	grep -q "workers" <<<"$msg" || cxvm_fail "unclear error for '$bad': $msg"
done
cxvm_log "ok: bad worker counts refused"
if msg=$(cxl add --backend kernel --workers 4 "$img" 2>&1); then cxvm_fail "kernel backend with 4 workers accepted"; fi
cxvm_log "ok: refused: $msg"
if msg=$(cxl add --backend ublk "$img" 2>&1); then cxvm_fail "backend ublk accepted"; fi

# auto: many workers + direct I/O possible -> kernel loop with direct I/O
out=$(cxl --json add --workers 4 "$img") || cxvm_fail "auto 4 workers: $out"
cxl_expect "auto+dio -> kernel" "$(jq -r .device.backend <<<"$out")" kernel
cxl_expect "auto+dio: dio on" "$(jq -r '.device."direct-io"' <<<"$out")" true
cxl detach "$(jq -r .device.name <<<"$out")" >/dev/null
# auto: many workers + direct I/O off -> nbd
out=$(cxl --json add --workers 4 --direct-io=off "$img") || cxvm_fail "auto 4 workers dio off: $out"
cxl_expect "auto+buffered -> nbd" "$(jq -r .device.backend <<<"$out")" nbd
dev=$(jq -r .device.name <<<"$out")
if msg=$(cxl set "$dev" --workers 2 2>&1); then cxvm_fail "nbd workers changed at runtime?"; fi
grep -q "at runtime" <<<"$msg" || cxvm_fail "unclear error: $msg"
cxvm_log "ok: refused: $msg"
cxl detach "$dev" >/dev/null || cxvm_fail detach
# auto on ramfs (direct I/O impossible on every kernel) with 2 workers -> nbd, buffered workers
mkdir -p /tmp/t && mount -t ramfs none /tmp/t && truncate -s 32M /tmp/t/img
if dd if=/dev/zero of=/tmp/t/img bs=4096 count=1 oflag=direct conv=notrunc status=none 2>/dev/null; then
	cxvm_fail "ramfs accepted O_DIRECT on $CXVM_KERNEL: this check needs a filesystem that refuses it"
fi
out=$(cxl --json add --workers 2 /tmp/t/img) || cxvm_fail "ramfs auto: $out"
cxl_expect "auto on ramfs -> nbd" "$(jq -r .device.backend <<<"$out")" nbd
cxl_expect "ramfs: buffered workers" "$(jq -r '.device."direct-io"' <<<"$out")" false
dev=$(jq -r .device.name <<<"$out")
dd if=/dev/urandom of=/tmp/d bs=1M count=2 status=none
dd if=/tmp/d of="$dev" bs=1M oflag=direct status=none && sync
cxl_expect "ramfs data" "$(head -c 2M "$dev" | md5sum)" "$(md5sum </tmp/d)"
cxl detach "$dev" >/dev/null || cxvm_fail detach
umount /tmp/t
# auto on tmpfs, where the kernels differ: O_DIRECT since Linux 6.6, so 6.1 -> nbd with
# buffered workers, 6.12 -> the kernel loop with direct I/O. The daemon asks the file, so its
# choice must agree with a plain O_DIRECT probe, and the probe with the kernel version.
mount -t tmpfs -o size=80M none /tmp/t && truncate -s 32M /tmp/t/img
kmaj=${CXVM_KERNEL%%.*} kmin=${CXVM_KERNEL#*.} && kmin=${kmin%%.*}
if [ "$kmaj" -gt 6 ] || { [ "$kmaj" = 6 ] && [ "$kmin" -ge 6 ]; }; then want=kernel; else want=nbd; fi
probe=nbd
dd if=/dev/zero of=/tmp/t/img bs=4096 count=1 oflag=direct conv=notrunc status=none 2>/dev/null && probe=kernel
cxl_expect "tmpfs O_DIRECT probe on $CXVM_KERNEL" "$probe" "$want"
out=$(cxl --json add --workers 2 /tmp/t/img) || cxvm_fail "tmpfs auto: $out"
cxl_expect "auto on tmpfs ($CXVM_KERNEL) -> $want" "$(jq -r .device.backend <<<"$out")" "$want"
cxl_expect "tmpfs: direct I/O" "$(jq -r '.device."direct-io"' <<<"$out")" \
	"$([ "$want" = kernel ] && echo true || echo false)"
cxvm_result_str tmpfs_auto_backend "$want"
cxl detach "$(jq -r .device.name <<<"$out")" >/dev/null || cxvm_fail detach
umount /tmp/t

b=$(cxl --json backends) || cxvm_fail "backends: $b"
cxvm_result backends "$b"
cxl_expect "loop available" "$(jq -r .loop.available <<<"$b")" true
cxl_expect "nbd available" "$(jq -r .nbd.available <<<"$b")" true
# No cxiosync ublk backend yet: never "available". Whether the kernel could is a kernel
# difference: Debian's 6.1 has CONFIG_BLK_DEV_UBLK off, 6.12 builds ublk_drv as a module.
cxl_expect "ublk not offered on $CXVM_KERNEL" "$(jq -r .ublk.available <<<"$b")" false
if modprobe -n ublk_drv 2>/dev/null; then want="module available"; else want="absent"; fi
jq -r .ublk.note <<<"$b" | grep -q "$want" || cxvm_fail "ublk note on $CXVM_KERNEL: $(jq -r .ublk.note <<<"$b"), expected '$want'"
cxvm_log "ok: ublk on $CXVM_KERNEL: $(jq -r .ublk.note <<<"$b")"
nbd_no_leaks
cxl_no_leaks
cxvm_log ok
