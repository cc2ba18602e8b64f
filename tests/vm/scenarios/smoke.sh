# SPDX-License-Identifier: GPL-2.0-or-later
# Smoke test of the harness itself: the guest runtime is what scenarios expect.
. "$CXVM_LIB"
cxvm_log "kernel $CXVM_KERNEL, scratch $CXVM_SCRATCH_DEV ($CXVM_SCRATCH_MAJMIN)"
grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts || cxvm_fail "no cgroup2"
grep -q ' /sys/kernel/tracing tracefs ' /proc/mounts || cxvm_fail "no tracefs"
grep -q " $CXVM_SCRATCH_MNT ext4 " /proc/mounts || cxvm_fail "scratch not mounted"
grep -q ' /run tmpfs ' /proc/mounts || cxvm_fail "/run is not a tmpfs"
cxvm_cgroup_setup
grep -qw io /sys/fs/cgroup/cgroup.subtree_control || cxvm_fail "io controller"
cxvm_cg_create a/b
cxvm_cg_run a/b cat /proc/self/cgroup | grep -qx '0::/a/b' || cxvm_fail "cg_run"
for m in loop null_blk dm-delay nbd; do modprobe "$m" || cxvm_fail "modprobe $m"; done
[ -d "$CXIOSYNC_SOURCE_DIR/tests/vm" ] || cxvm_fail "source tree not visible"
cxvm_result_str kernel "$CXVM_KERNEL"
cxvm_result_str scratch_majmin "$CXVM_SCRATCH_MAJMIN"
cxvm_result uptime_s "$(cut -d' ' -f1 /proc/uptime)"
cxvm_log ok
