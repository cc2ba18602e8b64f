# SPDX-License-Identifier: GPL-2.0-or-later
# nbd multi-worker devices with 1 and 4 workers: create, data through the device read back
# identically from the backing file after detach and through a new device (checksums), a
# filesystem on it passes fsck, PR_SET_IO_FLUSHER on every server thread, one connection per
# worker; no leaked devices, processes or records.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
. "$CXVM_DIR/scenarios/nbd_lib.inc"
nbd_no_leaks
img=$CXVM_SCRATCH_MNT/nbd.img
truncate -s 64M "$img"
head -c 8M /dev/urandom >/tmp/data
want=$(md5sum </tmp/data)

for w in 1 4; do
	out=$(cxl --json add --backend nbd --workers "$w" "$img") || cxvm_fail "add --workers $w: $out"
	dev=$(jq -r .device.name <<<"$out")
	pid=$(jq -r '.device."server-pid"' <<<"$out")
	name=${dev#/dev/}
	cxl_expect "backend ($w)" "$(jq -r .device.backend <<<"$out")" nbd
	cxl_expect "workers ($w)" "$(jq -r .device.workers <<<"$out")" "$w"
	# One NBD connection (socket) per worker; the kernel maps them onto at most one hardware
	# queue per CPU, which is why the server shares requests among its workers.
	ncpu=$(nproc)
	cxl_expect "hw queues = min(workers, cpus) ($w)" "$(ls /sys/block/$name/mq | wc -l)" $((w < ncpu ? w : ncpu))
	socks=0
	for f in /proc/$pid/fd/*; do [[ $(readlink "$f") == socket:* ]] && socks=$((socks + 1)); done
	cxl_expect "server sockets = workers ($w)" "$socks" "$w"
	[ -e /sys/block/$name/pid ] || cxvm_fail "$name not connected"
	cxl_expect "server alive ($w)" "$(cxl --json show "$dev" | jq -r '."server-alive"')" true
	cxl_expect "size" "$(cat /sys/block/$name/size)" 131072
	# 2 threads per worker (receiver per connection + I/O worker) plus the main and NBD_DO_IT
	# threads; every serving thread has PR_SET_IO_FLUSHER.
	cxl_expect "PR_SET_IO_FLUSHER threads ($w)" "$(nbd_flusher_threads "$pid")" $((2 * w))
	cxl list | grep -q "$dev" || cxvm_fail "list does not show $dev"
	cxl list | grep "$dev" | grep -q nbd || cxvm_fail "list does not say nbd"

	dd if=/tmp/data of="$dev" bs=1M oflag=direct status=none || cxvm_fail "write through $dev"
	sync
	got=$(head -c 8M "$dev" | md5sum)
	cxl_expect "read back through $dev" "$got" "$want"
	cxl detach "$dev" >/dev/null || cxvm_fail "detach $dev"
	[ -e /sys/block/$name/pid ] && cxvm_fail "$name still connected after detach"
	[ -d /proc/$pid ] && [ "$(cut -d' ' -f3 /proc/$pid/stat)" != Z ] && cxvm_fail "server $pid still running"
	cxl_expect "backing file after detach ($w)" "$(head -c 8M "$img" | md5sum)" "$want"

	# Again through a fresh device, then a filesystem that must pass fsck.
	dev=$(cxl add --backend nbd --workers "$w" "$img") || cxvm_fail "re-add"
	cxl_expect "read back after re-attach ($w)" "$(head -c 8M "$dev" | md5sum)" "$want"
	mkfs.ext4 -q -F "$dev" || cxvm_fail "mkfs on $dev"
	mkdir -p /tmp/m && mount "$dev" /tmp/m || cxvm_fail "mount $dev"
	for i in 1 2 3 4; do cp /tmp/data /tmp/m/f$i || cxvm_fail "cp"; done
	fstrim /tmp/m 2>/dev/null
	umount /tmp/m || cxvm_fail "umount"
	fsck.ext4 -n -f "$dev" >/tmp/fsck.log 2>&1 || cxvm_fail "fsck ($w workers): $(cat /tmp/fsck.log)"
	cxvm_log "ok: fsck clean with $w workers"
	mount -o ro "$dev" /tmp/m && cxl_expect "file in fs ($w)" "$(md5sum </tmp/m/f3)" "$want" && umount /tmp/m
	cxl detach "$dev" >/dev/null || cxvm_fail "detach"
	cxvm_result "workers_$w" "{\"ok\": true}"
done
nbd_no_leaks
cxl_no_leaks
cxvm_log ok
