# SPDX-License-Identifier: GPL-2.0-or-later
# A server whose backing storage hangs (the backing file on a dm device that is suspended):
# the workers block in the backing I/O, and the kernel fails the request once the NBD
# timeout has expired on the connections (bounded), never a hang forever. After the storage
# resumes, detach leaves nothing behind.
# (A SIGSTOP of the server is no hang test: the stop interrupts NBD_DO_IT, and the kernel
# tears the device down at once.)
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
. "$CXVM_DIR/scenarios/nbd_lib.inc"
export DM_DISABLE_UDEV=1
modprobe brd rd_nr=1 rd_size=131072 || cxvm_fail "modprobe brd"
dmsetup create --noudevsync cxhang --table "0 $(blockdev --getsz /dev/ram0) linear /dev/ram0 0" ||
	cxvm_fail "dmsetup create"
hdev=/dev/mapper/cxhang
[ -b $hdev ] || hdev=/dev/dm-0
mkfs.ext4 -q -F $hdev && mkdir -p /mnt/h && mount $hdev /mnt/h || cxvm_fail "fs on $hdev"
img=/mnt/h/nbd.img
truncate -s 64M "$img"
timeout_s=5
workers=2
out=$(cxl --json add --backend nbd --workers $workers --nbd-timeout $timeout_s --direct-io=on "$img") ||
	cxvm_fail "add: $out"
dev=$(jq -r .device.name <<<"$out")
dd if=/dev/urandom of="$dev" bs=1M count=8 oflag=direct status=none || cxvm_fail "write before hang"
sync; echo 3 >/proc/sys/vm/drop_caches
dmsetup suspend --noudevsync cxhang || cxvm_fail "dmsetup suspend"
t0=$(cxvm_now_ms)
limit=$((workers * timeout_s * 4 + 60))
timeout $limit dd if="$dev" of=/dev/null bs=4k count=1 skip=500 iflag=direct status=none 2>/tmp/dd.err
rc=$?
t1=$(cxvm_now_ms)
cxvm_result hang_io_error_ms $((t1 - t0))
dmsetup resume --noudevsync cxhang || cxvm_fail "dmsetup resume"
[ $rc = 124 ] && cxvm_fail "read from a hung server's device still blocked after $limit s"
[ $rc = 0 ] && cxvm_fail "read from a hung server's device succeeded"
cxvm_log "ok: read failed after $((t1 - t0)) ms (nbd timeout ${timeout_s}s, $workers connections): $(head -c 200 /tmp/dd.err)"
cxl detach "$dev" >/dev/null 2>&1 || cxvm_log "detach after hang: $(cxl detach "$dev" 2>&1)"
for ((k = 0; k < 100; k++)); do [ -z "$(nbd_servers)" ] && break; sleep 0.1; done
umount /mnt/h
dmsetup remove --noudevsync cxhang
nbd_no_leaks
cxl_no_leaks
cxvm_log ok
