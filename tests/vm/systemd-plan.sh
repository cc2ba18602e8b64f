#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The scenario loop for `vmrun.py --init=systemd` (run by cxvm-run.service, see
# systemd-stage2.sh). Same contract as guest-init.sh: /run/cxvm/plan.sh in, per scenario
# /run/cxvm/NAME/{log,result.kv,...,status} out, /run/cxvm/ready and /run/cxvm/done.
# Differences: systemd is PID 1, so no `kill -1` and no cgroup tree wipe between scenarios
# (scenarios under systemd clean up their own units); at the end every io.max is lifted and
# the machine powers off with sysrq (no slow orderly shutdown under TCG).
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb
case " $(</proc/cmdline) " in *" cxvm.debug "*) PS4='+ $EPOCHREALTIME ' && set -x ;; esac

if ! [ -f /run/cxvm/plan.sh ]; then
	echo "cxvm systemd-plan: FATAL: no /run/cxvm/plan.sh"
	exit 1
fi
mkdir -p /run/cxvm-logs /mnt/scratch
. /run/cxvm/plan.sh
export CXVM_SCRATCH_MNT=/mnt/scratch CXVM_INIT=systemd
read -r CXVM_KERNEL </proc/sys/kernel/osrelease
export CXVM_KERNEL
read -r up _ </proc/uptime
echo "$up" >/run/cxvm/ready
echo "cxvm: guest up under systemd (kernel $CXVM_KERNEL, uptime ${up}s)"

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

lift_all_io_max() {
	local f l
	while read -r f; do
		while read -r l _; do
			echo "$l rbps=max wbps=max riops=max wiops=max" >"$f"
		done <"$f"
	done < <(find /sys/fs/cgroup -mindepth 2 -name io.max)
}

i=0
while [ $i -lt ${#CXVM_PLAN[@]} ]; do
	name=${CXVM_PLAN[$i]} script=${CXVM_PLAN[$((i + 1))]} serial=${CXVM_PLAN[$((i + 2))]}
	i=$((i + 3))
	share=/run/cxvm/$name
	out=/run/cxvm-out/$name
	mkdir -p "$share" "$out"
	if [ $i -gt 3 ]; then
		lift_all_io_max
		umount -l "$CXVM_SCRATCH_MNT" 2>/dev/null
	fi
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
lift_all_io_max
echo ok >/run/cxvm/done
echo "cxvm: all scenarios ran; powering off"
echo o >/proc/sysrq-trigger
sleep 30
