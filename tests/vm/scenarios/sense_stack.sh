# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 4: the block device stack on a real kernel, read by cxiosync-observe.
#   vda (scratch) <- loopA (file on vda, partitioned: loopAp1 with ext4)
#   loopAp1's fs  <- loopB (file on loopAp1)   => edge loopB -> loopA (whole disk)
#   dm linear     <- loopB                      => edge dm -> loopB
# plus a syncfs on the partition's filesystem from cg2 while cg1 (limited on loopA) is
# dirty there: target_device must be loopA (partition mapped to its whole disk).
# Assertions: sense_stack.check.py.
. "$CXVM_LIB"
OBS=$CXIOSYNC_BUILD_DIR/daemon/cxiosync-observe
[ -x "$OBS" ] || cxvm_fail "no $OBS"
mnt=$CXVM_SCRATCH_MNT
modprobe loop || cxvm_fail "modprobe loop"
modprobe dm-mod 2>/dev/null

majmin() { printf '%d:%d' "0x$(stat -c %t "$1")" "0x$(stat -c %T "$1")"; }
le32() { printf "\\x$(printf %02x $(($1 & 255)))\\x$(printf %02x $((($1 >> 8) & 255)))\\x$(printf %02x $((($1 >> 16) & 255)))\\x$(printf %02x $((($1 >> 24) & 255)))"; }

# A 64 MiB image with an MBR holding one Linux partition from sector 2048 to the end.
img=$mnt/imgA
truncate -s 64M "$img"
{
	printf '\x00\x00\x00\x00\x83\x00\x00\x00'
	le32 2048
	le32 $((64 * 2048 - 2048))
} | dd of="$img" bs=1 seek=446 conv=notrunc status=none
printf '\x55\xaa' | dd of="$img" bs=1 seek=510 conv=notrunc status=none
loopA=$(losetup -P -f --show "$img") || cxvm_fail "losetup -P $img"
for _ in $(seq 50); do [ -b "${loopA}p1" ] && break; sleep 0.1; done
[ -b "${loopA}p1" ] || cxvm_fail "no ${loopA}p1"
mkfs.ext4 -q -F "${loopA}p1" || cxvm_fail "mkfs ${loopA}p1"
mkdir -p /mnt/part && mount "${loopA}p1" /mnt/part || cxvm_fail "mount ${loopA}p1"
truncate -s 16M /mnt/part/imgB
loopB=$(losetup -f --show /mnt/part/imgB) || cxvm_fail "losetup imgB"
dm=
if dmsetup create sense-lin --table "0 $((16 * 2048)) linear $loopB 0" 2>"$CXVM_OUT/dm.err"; then
	dm=$(dmsetup info -c --noheadings -o major,minor --separator : sense-lin | tr -d ' ')
fi
cxvm_result_str vda "$CXVM_SCRATCH_MAJMIN"
cxvm_result_str loopA "$(majmin "$loopA")"
cxvm_result_str loopAp1 "$(majmin "${loopA}p1")"
cxvm_result_str loopB "$(majmin "$loopB")"
cxvm_result_str dm "$dm"

# syncfs on the partition filesystem while cg1 (limited on loopA) is dirty there.
cxvm_cgroup_setup
cxvm_cg_create cg1 cg2
cxvm_io_max cg1 "wbps=1048576" "$(majmin "$loopA")"
"$OBS" --json --changes --poll-interval-ms=50 >"$CXVM_OUT/observe.jsonl" \
	2>"$CXVM_OUT/observe.err" &
obs=$!
for _ in $(seq 100); do [ -s "$CXVM_OUT/observe.jsonl" ] && break; sleep 0.1; done
cxvm_cg_run cg1 dd if=/dev/zero of=/mnt/part/dirty bs=1M count=3 status=none
cxvm_wait_dirty cg1 $((2 * 1024 * 1024)) 5 || cxvm_log "cg1 not dirty yet"
cxvm_cg_spawn cg2 sync -f /mnt/part
pid=$!
wait "$pid"
sleep 0.3
cxvm_result syncfs_pid "$pid"
kill -TERM "$obs"
wait "$obs"
"$OBS" --once --json --detector=procfs >"$CXVM_OUT/once.json" 2>>"$CXVM_OUT/observe.err" ||
	cxvm_fail "observe --once failed"
cxvm_log "loopA $loopA loopB $loopB dm '$dm': $(jq -c .devices "$CXVM_OUT/once.json")"
[ -n "$dm" ] && dmsetup remove sense-lin
losetup -d "$loopB"
umount /mnt/part
losetup -d "$loopA"
