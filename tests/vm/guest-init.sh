#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Stage 2: PID 1 inside the VM after switch_root (the host's root fs, overlaid).
# Sets up the runtime, then runs every scenario of the plan written by vmrun.py:
#   /run/cxvm            writable 9p share (host temp dir)
#   /run/cxvm/plan.sh    env + CXVM_PLAN=(name path name path ...)
#   /run/cxvm/NAME/      per scenario: a copy of its CXVM_OUT (/run/cxvm-out/NAME: log,
#                        result.kv, files...), then status (written last)
#   /run/cxvm/ready      guest is up;  /run/cxvm/done  all scenarios ran
# Then powers off. Never exits (PID 1 exiting panics; panic=-1 also ends QEMU).
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb

# cxvm.debug on the kernel command line (vmrun.py --append cxvm.debug): trace this script.
case " $(</proc/cmdline) " in *" cxvm.debug "*) PS4='+ $EPOCHREALTIME ' && set -x ;; esac

poweroff_now() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 30
}
trap poweroff_now EXIT

# Stage 1 mounted /run /tmp /dev/pts /dev/shm, cgroup2 (nsdelegate), tracefs, debugfs,
# configfs and the results share /run/cxvm.
if ! [ -f /run/cxvm/plan.sh ]; then
	echo "cxvm stage2: FATAL: no /run/cxvm/plan.sh (results share not mounted?)"
	exit 1
fi
mkdir -p /run/cxvm-logs /mnt/scratch

. /run/cxvm/plan.sh
export CXVM_SCRATCH_MNT=/mnt/scratch
read -r CXVM_KERNEL </proc/sys/kernel/osrelease
export CXVM_KERNEL
read -r up _ </proc/uptime
echo "$up" >/run/cxvm/ready
echo "cxvm: guest up (kernel $CXVM_KERNEL, uptime ${up}s)"

# The scratch disk (ext4, formatted by the host) whose virtio serial is $1.
disk_by_serial() {
	local b ser k
	for ((k = 0; k < 100; k++)); do
		for b in /sys/block/vd*; do
			ser=
			read -r ser <"$b/serial" 2>/dev/null
			[ "$ser" = "$1" ] && echo "/dev/${b##*/}" && return 0
		done
		sleep 0.1
	done
	return 1
}

# Leaves the machine as the next scenario expects it: no stray processes, mounts,
# cgroups or trace instances.
reset_guest() {
	kill -KILL -1 2>/dev/null
	sleep 0.1
	# Lift every io.max first: leftover throttled dirty data must not slow the next one.
	find /sys/fs/cgroup -mindepth 2 -name io.max | while read -r f; do
		awk '{print $1 " rbps=max wbps=max riops=max wiops=max"}' "$f" | while read -r l; do
			echo "$l" >"$f"
		done
	done
	awk '$2 ~ "^/mnt/scratch" {print $2}' /proc/mounts | sort -r | while read -r m; do
		umount -l "$m"
	done
	for inst in /sys/kernel/tracing/instances/*/; do
		[ -d "$inst" ] && rmdir "$inst" 2>/dev/null
	done
	find /sys/fs/cgroup -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
	echo >/sys/kernel/tracing/set_event 2>/dev/null
	# Loop devices a scenario left bound (it failed before its own cleanup): detach them,
	# or the next scenario's leak check fails for someone else's leak. Said on the console.
	if [ -e /dev/loop-control ] && [ -n "$(losetup -a 2>/dev/null)" ]; then
		echo "cxvm: reset: detaching loop devices left bound: $(losetup -a | tr '\n' ' ')"
		losetup -D
	fi
}

i=0
while [ $i -lt ${#CXVM_PLAN[@]} ]; do
	name=${CXVM_PLAN[$i]} script=${CXVM_PLAN[$((i + 1))]} serial=${CXVM_PLAN[$((i + 2))]}
	i=$((i + 3))
	share=/run/cxvm/$name
	out=/run/cxvm-out/$name # scenario's CXVM_OUT, on tmpfs: cheap writes; copied below
	mkdir -p "$share" "$out"
	[ $i -gt 3 ] && reset_guest
	# noinit_itable: no background zeroing (ext4lazyinit) that would disturb timings.
	if ! CXVM_SCRATCH_DEV=$(disk_by_serial "$serial") ||
		! mount -o noinit_itable "$CXVM_SCRATCH_DEV" "$CXVM_SCRATCH_MNT"; then
		echo "cxvm: cannot mount the scratch disk (serial $serial) for $name"
		echo 125 >"$share/status.tmp" && mv "$share/status.tmp" "$share/status"
		continue
	fi
	read -r CXVM_SCRATCH_MAJMIN <"/sys/block/${CXVM_SCRATCH_DEV#/dev/}/dev"
	export CXVM_SCRATCH_DEV CXVM_SCRATCH_MAJMIN
	echo "cxvm: ===== scenario $name: start (scratch $CXVM_SCRATCH_DEV $CXVM_SCRATCH_MAJMIN)"
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
	t1=${EPOCHREALTIME/./}
	echo "cxvm: ===== scenario $name: exit $rc after $(((t1 - t0) / 1000)) ms"
	cp "$log" "$out/log"
	echo "$(((t1 - t0) / 1000))" >"$out/elapsed_ms"
	cp -r "$out/." "$share/" || rc=126
	echo "$rc" >"$share/status.tmp" && mv "$share/status.tmp" "$share/status"
done
kill -KILL -1 2>/dev/null
echo ok >/run/cxvm/done
exit 0
