# SPDX-License-Identifier: GPL-2.0-or-later
# Autoclear (the device lives while something holds it), plain detach, lazy detach of a
# mounted device (autoclear set, reported, gone after umount), ownership rules.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
cxl_no_leaks
img=$CXVM_SCRATCH_MNT/fs.img
truncate -s 64M "$img"
mkfs.ext4 -q -F "$img" || cxvm_fail mkfs
mkdir -p /tmp/m

# Autoclear + a command that holds it (mount): gone after umount.
cxl add --autoclear "$img" -- mount {} /tmp/m || cxvm_fail "add --autoclear -- mount"
dev=$(awk '$2 == "/tmp/m" {print $1}' /proc/mounts)
[ -n "$dev" ] || cxvm_fail "not mounted"
cxl_expect "autoclear" "$(cxl_sys "$dev" loop/autoclear)" 1
umount /tmp/m
for _ in $(seq 50); do [ -e "/sys/block/${dev#/dev/}/loop" ] || break; sleep 0.1; done
[ -e "/sys/block/${dev#/dev/}/loop" ] && cxvm_fail "$dev survived umount with autoclear"
cxvm_log "ok: autoclear device gone after umount"
# Without a holder the tool refuses (the device would vanish at once).
if cxl add --autoclear "$img" 2>/dev/null; then cxvm_fail "autoclear without a holder accepted"; fi
cxl_no_leaks

# Lazy detach: mounted device.
dev=$(cxl add "$img") || cxvm_fail add
mount "$dev" /tmp/m || cxvm_fail mount
cxl detach "$dev"
rc=$?
cxl_expect "lazy detach exit status" "$rc" 3
cxl_expect "lazy: autoclear" "$(cxl_sys "$dev" loop/autoclear)" 1
cxl_expect "lazy: still bound" "$(cxl_sys "$dev" loop/backing_file)" "$img"
umount /tmp/m
for _ in $(seq 50); do [ -e "/sys/block/${dev#/dev/}/loop" ] || break; sleep 0.1; done
[ -e "/sys/block/${dev#/dev/}/loop" ] && cxvm_fail "$dev survived umount after lazy detach"
cxvm_log "ok: lazy detach completed at umount"
cxl reconcile || cxvm_fail reconcile

# Foreign devices: listed, guessed, never changed without root + --force.
fdev=$(losetup -f --show "$img") || cxvm_fail "losetup"
cxl_expect "foreign listed only with --all" "$(cxl --json list | jq '.loopdevices | length')" 0
cxl_expect "foreign marked" "$(cxl --json list --all | jq -r '.loopdevices[0]."foreign-owner"')" manual
if cxl detach "$fdev" 2>/dev/null; then cxvm_fail "detached a foreign device without --force"; fi
if cxl --as-uid 1000 detach "$fdev" --force 2>/dev/null; then cxvm_fail "non-root --force accepted"; fi
if cxl set "$fdev" --direct-io=on 2>/dev/null; then cxvm_fail "changed a foreign device"; fi
cxl_expect "foreign untouched" "$(cxl_sys "$fdev" loop/dio)" 0
cxl detach "$fdev" --force || cxvm_fail "root --force detach"
# Devices of another uid: the manager reports it (the bus layer asks polkit).
dev=$(cxl --as-uid 1000 add "$img") || cxvm_fail add
cxl_expect "setup-by-uid" "$(cxl --json show "$dev" | jq -r '."setup-by-uid"')" 1000
cxl detach "$dev" || cxvm_fail detach
cxl_no_leaks
cxvm_log ok
