#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Stage 1 (/init of the busybox initramfs built by vmrun.py): load the virtio/9p/overlay
# modules, mount the host's / (9p, read-only) under a tmpfs overlay and switch_root into
# it, running the stage-2 program named by `cxvm.stage2=` on the kernel command line
# (tests/vm/guest-init.sh; a future systemd boot would name /lib/systemd/systemd).
/bin/busybox --install -s /bin
export PATH=/bin

die() {
	echo "cxvm stage1: FATAL: $*"
	echo o >/proc/sysrq-trigger
	sleep 10
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

for m in $(cat /lib/modules/order); do
	insmod "/lib/modules/$m.ko" || die "insmod $m failed"
done

stage2=
moddir=
hostbind=
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	cxvm.stage2=*) stage2="${arg#cxvm.stage2=}" ;;
	cxvm.moddir=*) moddir="${arg#cxvm.moddir=}" ;;
	cxvm.hostbind=*) hostbind="${arg#cxvm.hostbind=}" ;;
	esac
done
[ -n "$stage2" ] || die "no cxvm.stage2= on the kernel command line"

echo "cxvm stage1: modules loaded"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /lower ||
	die "mounting the host root over 9p failed"
mount -t tmpfs -o mode=755 tmpfs /rw || die "tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot ||
	die "overlay mount failed"
# vmrun.py --root: / is another distribution's root; the host's / (share hostfs) lends the
# paths the run needs (source tree, build tree, kernel modules) at the same place.
if [ -n "$hostbind" ]; then
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostfs /host ||
		die "mounting the host's / (hostfs) failed"
	for p in $(echo "$hostbind" | tr , ' '); do
		mkdir -p "/newroot$p" && mount --bind "/host$p" "/newroot$p" || die "binding host $p"
	done
fi
# A kernel unpacked outside the host's /lib/modules (vmrun.py --kernel-dir): its modules
# appear where modprobe looks, in the overlay only.
if [ -n "$moddir" ]; then
	[ -f "/newroot$moddir/modules.dep" ] || die "cxvm.moddir=$moddir has no modules.dep"
	# (a root without any kernel, e.g. --root's Debian 13, has no /lib/modules yet)
	mkdir -p /newroot/lib/modules && ln -sfn "$moddir" "/newroot/lib/modules/$(uname -r)" ||
		die "linking $moddir"
fi
[ -x "/newroot$stage2" ] || [ -f "/newroot$stage2" ] || die "stage2 $stage2 not found in the guest root"

mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev

# The runtime mounts stage 2 expects, done here with the in-RAM busybox (every exec from
# the 9p root is slow under TCG). A systemd stage 2 would accept these as they are.
n=/newroot
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs $n/run || die "tmpfs /run"
# /tmp stays the overlay's (host /tmp read-only below, guest tmpfs above): a checkout or
# build dir under the host's /tmp (CI may clone there) must stay visible to the guest.
mkdir -p $n/dev/pts $n/dev/shm $n/run/cxvm
mount -t devpts -o gid=5,mode=620 devpts $n/dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs $n/dev/shm
mount -t cgroup2 -o nsdelegate cgroup2 $n/sys/fs/cgroup || die "cgroup2"
mount -t tracefs tracefs $n/sys/kernel/tracing || die "tracefs"
mount -t debugfs debugfs $n/sys/kernel/debug
mount -t configfs configfs $n/sys/kernel/config
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 cxvm $n/run/cxvm ||
	die "cannot mount the results share"
ln -sf /proc/self/mounts $n/run/mtab
hostname cxvm
echo "cxvm stage1: switch_root to $stage2"
exec switch_root /newroot /bin/bash "$stage2"
