#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every program's bad command line: exactly one line on stderr that names the option and
# the value, nothing on stdout, and the documented exit status. Nothing here reaches a
# device, a bus or a config: parsing fails first.
#   exit_codes.sh CXIOSYNCD CXIOSYNCCTL CXIOSYNC_LOOP NBD_SERVER OBSERVE
daemon=$1 ctl=$2 loop=$3 nbd=$4 observe=$5
fail=0

# expect STATUS PATTERN PROGRAM ARGS...
expect() {
	want=$1 pattern=$2
	shift 2
	err=$("$@" 2>&1 >/tmp/cxiosync-exit-codes.$$)
	rc=$?
	out=$(cat /tmp/cxiosync-exit-codes.$$)
	rm -f /tmp/cxiosync-exit-codes.$$
	lines=$(printf '%s\n' "$err" | wc -l)
	if [ "$rc" != "$want" ] || [ "$lines" != 1 ] || [ -n "$out" ] ||
		! printf '%s\n' "$err" | grep -qF -- "$pattern"; then
		echo "FAIL: $* -> status $rc (want $want), stderr: $err, stdout: $out"
		fail=1
	else
		echo "ok: $* -> $rc: $err"
	fi
}

expect 2 "unknown option '--frob'" "$daemon" --frob
expect 2 "--detector: invalid value 'ebpf'" "$daemon" --detector ebpf
expect 2 "option --dry-run takes no value" "$daemon" --dry-run=yes
# A namespace it cannot enter stops it before it starts blind (a container: docs/kubernetes.md).
expect 1 "--cgroupns=/nonexistent/ns: open: No such file or directory" "$daemon" --cgroupns=/nonexistent/ns
expect 2 "--size: invalid value '1Q'" "$ctl" loop add /x.img --size 1Q
expect 2 "unknown option '--wat'" "$ctl" --wat
# `cxiosync-loop set DEV --autoclear=bad` exited 2 without a word.
expect 2 "--autoclear: invalid value 'bad'" "$loop" --run-dir /nonexistent set loop0 --autoclear=bad
expect 2 "--size: invalid value 'lots'" "$loop" --run-dir /nonexistent add --size lots img
expect 2 "--workers: " "$loop" --run-dir /nonexistent add --workers four img
expect 2 "--as-uid: 'x'" "$loop" --as-uid x list
expect 1 "--workers: '99' is not a number in 1..16" "$nbd" --workers 99
expect 1 "--direct-io: 'maybe'" "$nbd" --direct-io=maybe
expect 2 "--duration-ms: 'soon'" "$observe" --duration-ms=soon
exit $fail
