# SPDX-License-Identifier: GPL-2.0-or-later
# Harness check, not registered with ctest (see tests/vm/README.md, -accel): the daemon's
# tracefs instance life cycle (mkdir, buffer settings, enable the sync syscall and writeback
# events, read trace_pipe, disable, rmdir) in a loop for STRESS_SECS (default 120) while
# both vCPUs are busy. Each enable/disable patches kernel text on the running guest; under
# QEMU 7.2's multi-threaded TCG this hung the guest after 20-135 s (3 runs of 3).
. "$CXVM_LIB"
T=/sys/kernel/tracing
evs="syscalls/sys_enter_sync syscalls/sys_exit_sync syscalls/sys_enter_syncfs
syscalls/sys_exit_syncfs writeback/writeback_queue writeback/writeback_start"
(while :; do :; done) &
spin=$!
(while :; do head -c 1M /dev/zero >"$CXVM_SCRATCH_MNT/x"; done) &
writer=$!
end=$(($(cut -d. -f1 /proc/uptime) + ${STRESS_SECS:-120}))
n=0
while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do
	i=$T/instances/cxvm_stress$n
	mkdir "$i" || cxvm_fail "mkdir $i"
	echo 512 >"$i/buffer_size_kb"
	echo 0 >"$i/buffer_percent"
	for e in $evs; do echo 1 >"$i/events/$e/enable"; done
	cat "$i/trace_pipe" >/dev/null &
	reader=$!
	sync
	sync
	kill $reader
	wait $reader 2>/dev/null
	for e in $evs; do echo 0 >"$i/events/$e/enable"; done
	rmdir "$i" || cxvm_fail "rmdir $i"
	n=$((n + 1))
	[ $((n % 10)) -eq 0 ] && cxvm_log "cycle $n"
done
kill $spin $writer
cxvm_result cycles "$n"
cxvm_log "ok: $n cycles"
