# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for VM scenarios. Source it first:   . "$CXVM_LIB"
# Runs under bash inside the guest. Environment set by the harness (guest-init.sh):
#   CXVM_SCENARIO        this scenario's name
#   CXVM_OUT             this scenario's output dir (guest tmpfs; copied to the host when
#                        the scenario ends, also after a timeout): log, result.kv, files/
#   CXVM_DIR             tests/vm of the source tree (same path as on the host)
#   CXIOSYNC_SOURCE_DIR  the source tree;  CXIOSYNC_BUILD_DIR  the build tree (host path)
#   CXVM_SCRATCH_DEV     /dev/vda, freshly formatted ext4, mounted at CXVM_SCRATCH_MNT
#   CXVM_SCRATCH_MAJMIN  e.g. 254:0;  CXVM_KERNEL  uname -r
#   plus everything passed with `vmrun.py --env KEY=VALUE`.
# Mounted: cgroup2 /sys/fs/cgroup (nsdelegate), tracefs /sys/kernel/tracing, debugfs,
# configfs, tmpfs /run /tmp /dev/shm. modprobe works (loop, null_blk, dm-delay, nbd...).

set -u
CXVM_CGROOT=/sys/fs/cgroup

# Helpers avoid forks where they can: under TCG on a busy host every exec costs ~0.5 s.

cxvm_log() {
	local up _
	read -r up _ </proc/uptime
	echo "[$CXVM_SCENARIO $up] $*"
}
cxvm_fail() {
	echo "[$CXVM_SCENARIO] FAIL: $*" >&2
	exit 1
}

# cxvm_now_ms: wall clock in milliseconds (no fork).
cxvm_now_ms() {
	local us=${EPOCHREALTIME/./}
	echo $((us / 1000))
}

# cxvm_time_ms VAR CMD...: runs CMD, stores its duration in ms in VAR, returns its status.
cxvm_time_ms() {
	local __var=$1 __t0 __t1 __rc
	shift
	__t0=${EPOCHREALTIME/./}
	"$@"
	__rc=$?
	__t1=${EPOCHREALTIME/./}
	printf -v "$__var" '%d' $(((__t1 - __t0) / 1000))
	return $__rc
}

# cxvm_cgroup_setup [CONTROLLERS]: enables controllers (default "+io +memory") for the
# root's children.
cxvm_cgroup_setup() {
	echo "${1:-+io +memory}" >"$CXVM_CGROOT/cgroup.subtree_control" ||
		cxvm_fail "cannot enable ${1:-+io +memory} in $CXVM_CGROOT/cgroup.subtree_control"
}

# cxvm_cg_create PATH...: creates cgroups (nested paths allowed, e.g. a/b); enables
# +io +memory on every intermediate level.
cxvm_cg_create() {
	local cg part cur
	for cg in "$@"; do
		cur=$CXVM_CGROOT
		local IFS=/
		for part in $cg; do
			[ -n "$part" ] || continue
			if [ "$cur" != "$CXVM_CGROOT" ]; then
				echo "+io +memory" >"$cur/cgroup.subtree_control" ||
					cxvm_fail "subtree_control of $cur"
			fi
			cur=$cur/$part
			mkdir -p "$cur" || cxvm_fail "mkdir $cur"
		done
	done
}

# cxvm_cg_path CG: absolute path of a cgroup given relative to the cgroup2 root.
cxvm_cg_path() { echo "$CXVM_CGROOT/${1#/}"; }

# cxvm_io_max CG "wbps=1048576 ..." [MAJ:MIN]: writes io.max (default: scratch disk).
cxvm_io_max() {
	local dev=${3:-$CXVM_SCRATCH_MAJMIN}
	echo "$dev $2" >"$(cxvm_cg_path "$1")/io.max" ||
		cxvm_fail "writing '$dev $2' to $1/io.max"
}

# cxvm_cg_run CG CMD...: runs CMD inside cgroup CG (foreground, returns its status).
cxvm_cg_run() {
	local cg=$1
	shift
	(echo "$BASHPID" >"$(cxvm_cg_path "$cg")/cgroup.procs" && exec "$@")
}

# cxvm_cg_spawn CG CMD...: starts CMD in cgroup CG in the background; its PID is in $!.
cxvm_cg_spawn() {
	local cg=$1
	shift
	(echo "$BASHPID" >"$(cxvm_cg_path "$cg")/cgroup.procs" && exec "$@") &
}

# cxvm_stamped_syncer CG FIFO STAMPS: a persistent python3 in CG calls sync(2) once per line
# written to FIFO (made here) and appends "PID T0_MS T1_MS" (wall clock right before and after
# the call) to STAMPS, so process start-up is not timed. Background; its PID is in $!. Open
# the FIFO for writing afterwards (exec 3>FIFO) and close it to end the syncer.
cxvm_stamped_syncer() {
	mkfifo "$2"
	cxvm_cg_spawn "$1" /usr/bin/python3 -c 'import os, sys, time
with open(sys.argv[2], "a") as out:
    for _ in open(sys.argv[1]):
        t0 = time.time() * 1000
        os.sync()
        out.write("%d %.1f %.1f\n" % (os.getpid(), t0, time.time() * 1000))
        out.flush()' "$2" "$3"
}

# cxvm_dirty CG FILE MIB: a writer in CG dirties MIB MiB of page cache (no fsync).
cxvm_dirty() {
	cxvm_cg_run "$1" dd if=/dev/zero of="$2" bs=1M count="$3" status=none ||
		cxvm_fail "dd into $2 from $1"
}

# cxvm_kv FILE KEY: value of KEY in a "key value" file (memory.stat), empty if absent.
cxvm_kv() {
	local k v
	while read -r k v; do
		[ "$k" = "$2" ] && echo "$v" && return 0
	done <"$1"
}

# cxvm_iostat CG KEY [MAJ:MIN]: KEY from CG's io.stat line of the device (0 if absent).
cxvm_iostat() {
	local dev=${3:-$CXVM_SCRATCH_MAJMIN} d rest kv
	while read -r d rest; do
		[ "$d" = "$dev" ] || continue
		for kv in $rest; do
			[ "${kv%%=*}" = "$2" ] && echo "${kv#*=}" && return 0
		done
	done <"$(cxvm_cg_path "$1")/io.stat"
	echo 0
}

# cxvm_wait_dirty CG BYTES [TIMEOUT_S]: waits until CG's file_dirty + file_writeback
# (memory.stat, which lags up to ~2 s) reaches BYTES. Returns 1 on timeout.
cxvm_wait_dirty() {
	local f end d w
	f=$(cxvm_cg_path "$1")/memory.stat
	end=$(($(cxvm_now_ms) + ${3:-5} * 1000))
	while :; do
		d=$(cxvm_kv "$f" file_dirty) w=$(cxvm_kv "$f" file_writeback)
		[ $((${d:-0} + ${w:-0})) -ge "$2" ] && return 0
		[ "$(cxvm_now_ms)" -ge "$end" ] && return 1
		sleep 0.1
	done
}

# cxvm_drop_caches: writes everything back and drops clean caches.
cxvm_drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# cxvm_result KEY JSON: sets KEY to a JSON value (number, array, object, true...) in the
# scenario's result.json.   cxvm_result_str KEY STRING: same for a string.
# Lines go to $CXVM_OUT/result.kv (no fork); the host assembles result.json, later
# values of a key replace earlier ones, and an invalid JSON value fails the scenario.
cxvm_result() {
	case $1 in *[!A-Za-z0-9_.-]* | "") cxvm_fail "result key '$1': use [A-Za-z0-9_.-]" ;; esac
	printf '%s\t%s\n' "$1" "${2//$'\n'/ }" >>"$CXVM_OUT/result.kv"
}
cxvm_result_str() {
	local s=$2
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\n'/\\n}
	s=${s//$'\t'/\\t}
	s=${s//$'\r'/\\r}
	cxvm_result "$1" "\"$s\""
}

# cxvm_save SRC [NAME]: copies a (kernel) file byte for byte into $CXVM_OUT/files/NAME
# with shell builtins only (no fork: fast enough to snapshot a blocked thread).
cxvm_save() {
	local dst=$CXVM_OUT/files/${2:-${1##*/}} line
	[ -d "${dst%/*}" ] || mkdir -p "${dst%/*}"
	{
		while IFS= read -r line; do printf '%s\n' "$line"; done
		[ -z "$line" ] || printf '%s' "$line"
	} <"$1" >"$dst" || cxvm_fail "cannot read $1"
}
