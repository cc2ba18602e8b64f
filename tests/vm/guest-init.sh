#!/bin/bash
# Stage 2: PID 1 inside the VM after switch_root (the host's root fs, overlaid).
# Sets up the runtime, then runs every scenario of the plan written by vmrun.py:
#   /run/cxvm            writable 9p share (host temp dir)
#   /run/cxvm/plan.sh    env + CXVM_PLAN=(name path name path ...)
#   /run/cxvm/NAME/      per scenario: log, result.json (optional), status (written last)
#   /run/cxvm/ready      guest is up;  /run/cxvm/done  all scenarios ran
# Then powers off. Never exits (PID 1 exiting panics; panic=-1 also ends QEMU).
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb

poweroff_now() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 30
}
trap poweroff_now EXIT

mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
mkdir -p /dev/pts /dev/shm /run/cxvm /run/cxvm-logs /mnt/scratch
mount -t devpts -o gid=5,mode=620 devpts /dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t configfs configfs /sys/kernel/config 2>/dev/null
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 cxvm /run/cxvm; then
	echo "cxvm stage2: FATAL: cannot mount the results share"
	exit 1
fi
hostname cxvm
ln -sf /proc/self/mounts /run/mtab 2>/dev/null
modprobe -q virtio_blk
modprobe -q ext4
for _ in $(seq 50); do [ -b /dev/vda ] && break; sleep 0.1; done

. /run/cxvm/plan.sh
export CXVM_SCRATCH_DEV=/dev/vda CXVM_SCRATCH_MNT=/mnt/scratch
CXVM_SCRATCH_MAJMIN=$(cat /sys/block/vda/dev)
CXVM_KERNEL=$(uname -r)
export CXVM_SCRATCH_MAJMIN CXVM_KERNEL
echo "$(cut -d' ' -f1 /proc/uptime)" >/run/cxvm/ready
echo "cxvm: guest up (kernel $CXVM_KERNEL, uptime $(cut -d' ' -f1 /proc/uptime)s)"

# Leaves the machine as the next scenario expects it: no stray processes, mounts,
# cgroups or trace instances; a freshly formatted scratch disk.
reset_guest() {
	kill -KILL -1 2>/dev/null
	sleep 0.2
	awk '$2 ~ "^/mnt/scratch" {print $2}' /proc/mounts | sort -r | while read -r m; do
		umount -l "$m"
	done
	for inst in /sys/kernel/tracing/instances/*/; do
		[ -d "$inst" ] && rmdir "$inst" 2>/dev/null
	done
	find /sys/fs/cgroup -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
	echo 0 >/sys/kernel/tracing/tracing_on 2>/dev/null
	echo 1 >/sys/kernel/tracing/tracing_on 2>/dev/null
	echo >/sys/kernel/tracing/set_event 2>/dev/null
	# Lazy init + noinit_itable: a fast mkfs and no background zeroing (ext4lazyinit) that would disturb timings.
	mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$CXVM_SCRATCH_DEV" &&
		mount -o noinit_itable "$CXVM_SCRATCH_DEV" "$CXVM_SCRATCH_MNT"
}

i=0
while [ $i -lt ${#CXVM_PLAN[@]} ]; do
	name=${CXVM_PLAN[$i]} script=${CXVM_PLAN[$((i + 1))]}
	i=$((i + 2))
	out=/run/cxvm/$name
	mkdir -p "$out"
	if ! reset_guest; then
		echo "cxvm: cannot prepare the scratch disk for $name"
		echo 125 >"$out/status.tmp" && mv "$out/status.tmp" "$out/status"
		continue
	fi
	echo "cxvm: ===== scenario $name: start"
	t0=${EPOCHREALTIME/./}
	# Output goes to a guest tmpfs file that `tail` streams to the console: processes a
	# scenario leaves behind cannot block anything; reset_guest kills them.
	log=/run/cxvm-logs/$name.log
	(
		cd /tmp || exit 1
		export CXVM_SCENARIO=$name CXVM_OUT=$out
		exec timeout -k 5 "$CXVM_SCENARIO_TIMEOUT" /bin/bash "$script"
	) >"$log" 2>&1 </dev/null &
	spid=$!
	tail -s 0.2 -n +1 -f --pid=$spid "$log" &
	tpid=$!
	wait $spid
	rc=$?
	wait $tpid
	cp "$log" "$out/log"
	t1=${EPOCHREALTIME/./}
	echo "cxvm: ===== scenario $name: exit $rc after $(((t1 - t0) / 1000)) ms"
	echo "$(((t1 - t0) / 1000))" >"$out/elapsed_ms"
	echo "$rc" >"$out/status.tmp" && mv "$out/status.tmp" "$out/status"
done
reset_guest >/dev/null 2>&1
umount /mnt/scratch 2>/dev/null
echo ok >/run/cxvm/done
exit 0
