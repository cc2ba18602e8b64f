#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs the dbus tier (dbus_tests) against the real cxiosyncd instead of the fake-backend test
# server (the CXIOSYNC_DBUS_TEST_SERVER hook of dbus_test.cpp), over a fake cgroup tree.
#   real_daemon.sh DBUS_TESTS CXIOSYNCD [gtest args...]
set -eu
tests=$1
daemon=$2
shift 2
T=$(mktemp -d /tmp/cxiosync-dbus-real.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
for d in cg/backup.slice cg/system.slice cg/user.slice cg/init.scope cg/cg1 cg/cg2 \
	proc sys trace run state config; do
	mkdir -p "$T/$d"
done
# A cgroup2 root with the io controller (cxiosyncd refuses any other).
printf 'cpuset cpu io memory pids\n' >"$T/cg/cgroup.controllers"
printf '8:0 rbps=max wbps=1048576 riops=max wiops=max\n' >"$T/cg/backup.slice/io.max"
printf 'file_dirty 4096\nfile_writeback 0\n' >"$T/cg/backup.slice/memory.stat"
: >"$T/cg/cg2/io.max"
# A symlink in the tree is never a cgroup (NoSuchCgroup).
ln -s backup.slice "$T/cg/link.slice"
export CXIOSYNC_DBUS_TEST_SERVER="$daemon --foreground --log-level=warning --bus={address} \
--cgroup-root=$T/cg --proc-root=$T/proc --sys-root=$T/sys --tracefs-root=$T/trace \
--run-dir=$T/run --state-dir=$T/state --config=$T/config --detector=procfs"
"$tests" "$@"
