# SPDX-License-Identifier: GPL-2.0-or-later
# Guest half of the detection-to-boost and idle-cost benchmark (issue 15, items 4 and 5),
# run by boost_latency.py through tests/vm/vmrun.py. For each daemon binary in
# LAT_DAEMONS ("NAME=PATH ...", default the build dir's cxiosyncd as "after"), one after
# the other in this boot so their numbers share the guest's load:
#   latency: cg1 (io.max wbps=1 MiB/s) holds LAT_MIB MiB fresh dirty data, a persistent
#   python3 in cg2 stamps the wall clock right before each sync(2) (process start-up not
#   counted); LAT_N syncs (default 100). The daemon's log (debug) has the boost lines and,
#   when the binary writes it, the per-phase "boost latency" line. The host pairs them.
#   LAT_DETECTOR (tracefs) is the detector of this part; LAT_N=0 skips it.
#   idle: for each size in IDLE_CGROUPS ("100 1000", default 1000) a fresh tree below /idle
#   with IDLE_LIMITED (default 5 % of the size) cgroups under an io.max write limit, nothing
#   dirty, nothing syncing, and for each detector in IDLE_DETECTORS (default tracefs) each
#   daemon: its CPU time (sum of its threads' /proc/PID/task/TID/schedstat run time, ns;
#   /proc/PID/stat utime+stime as a cross-check, 10 ms ticks) over IDLE_SECONDS (default 40)
#   after a settle time. Result keys idle_*_NAME_DETECTOR_SIZE, listed in idle_runs.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/daemon_common.inc"
N=${LAT_N:-100}
MIB=${LAT_MIB:-2}
DAEMONS=${LAT_DAEMONS:-after=$CXIOSYNC_BUILD_DIR/daemon/cxiosyncd}
LAT_DETECTOR=${LAT_DETECTOR:-tracefs}
IDLE_CGROUPS=${IDLE_CGROUPS:-1000}
IDLE_DETECTORS=${IDLE_DETECTORS:-tracefs}
IDLE_SECONDS=${IDLE_SECONDS:-40}
LIMIT="wbps=1048576"
mnt=$CXVM_SCRATCH_MNT
cxvm_cgroup_setup
cxvm_cg_create cg1 cg2
cxvm_io_max cg1 "$LIMIT"
limited_line=$(cxd_io_max cg1)
cxvm_result n "$N"
cxvm_result lat_mib "$MIB"
names=()

schedstat_sum() { # PID FIELD: sum over its threads of /proc/.../schedstat field FIELD
	local t s=0
	for t in /proc/"$1"/task/*/schedstat; do
		s=$((s + $(awk -v f="$2" '{print $f}' "$t")))
	done
	echo "$s"
}
cpu_ns() { schedstat_sum "$1" 1; } # run time of all its threads, ns
slices() { schedstat_sum "$1" 3; } # times its threads were given the CPU: wakeups
per_thread() { # PID: "comm=ns/slices ..." of each thread
	local t
	for t in /proc/"$1"/task/*; do
		printf '%s=%s ' "$(cat "$t/comm")" "$(awk '{print $1 "/" $3}' "$t/schedstat")"
	done
}
cpu_ticks_ms() {
	local hz
	hz=$(getconf CLK_TCK)
	awk -v hz="$hz" '{ sub(/^.*\) /, ""); print int(($12 + $13) * 1000 / hz) }' "/proc/$1/stat"
}

latency_run() { # NAME
	local name=$1 stamps fifo py i
	stamps=$CXVM_OUT/stamps-$name.txt
	: >"$stamps"
	cxd_start --detector="$LAT_DETECTOR"
	fifo=/tmp/lat-go-$name
	cxvm_stamped_syncer cg2 "$fifo" "$stamps"
	py=$!
	exec 3>"$fifo"
	for i in $(seq "$N"); do
		cxvm_dirty cg1 "$mnt/lat-$i" "$MIB"
		cxvm_wait_dirty cg1 $((MIB * 1048576 * 3 / 4)) 5 || cxvm_log "sync $i: cg1 dirty not seen"
		echo go >&3
		for _ in $(seq 600); do [ "$(wc -l <"$stamps")" -ge "$i" ] && break; sleep 0.05; done
		# The boost has ended before the next round (restore follows the sync's exit).
		cxd_wait_io_max cg1 "$limited_line" 3 || cxvm_log "sync $i: limit not restored in 3 s"
		rm -f "$mnt/lat-$i"
	done
	exec 3>&-
	wait "$py"
	rm -f "$fifo"
	cxvm_result "cpu_ms_latency_$name" "$(cpu_ticks_ms "$CXD_PID")"
	cxd_stop
	cxvm_log "$name: $(wc -l <"$stamps") syncs, $(grep -c 'action=boost ' "$CXD_LOG") boosts"
}

idle_tree() { # SIZE LIMITED: in one python3 (a bash mkdir loop forks 1000 times under TCG)
	python3 - "$CXVM_CGROOT/idle" "$1" "$2" "$CXVM_SCRATCH_MAJMIN" <<'EOF'
import os, sys
root, n, limited, dev = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if os.path.isdir(root):  # the previous size's tree, deepest first
    for d, _, _ in sorted(os.walk(root), key=lambda w: -w[0].count("/")):
        os.rmdir(d)
os.mkdir(root)
open(root + "/cgroup.subtree_control", "w").write("+io +memory")
groups = max(1, n // 100)
made = 0
for g in range(groups):
    gp = "%s/g%02d" % (root, g)
    os.mkdir(gp)
    open(gp + "/cgroup.subtree_control", "w").write("+io +memory")
    made += 1
every = max(1, (n - groups) // max(1, limited))
k = 0
while made < n:
    p = "%s/g%02d/c%04d" % (root, k % groups, k)
    os.mkdir(p)
    if k % every == 0 and limited > 0:
        open(p + "/io.max", "w").write("%s wbps=1048576" % dev)
        limited -= 1
    made += 1
    k += 1
EOF
}

idle_run() { # NAME DETECTOR SIZE
	local name=$1_$2_$3 n0 n1 t0 t1 c0 c1 s0 s1
	cxd_start --detector="$2"
	sleep 5 # the first walks and the startup rescans
	cxvm_log "$name idle start, threads: $(per_thread "$CXD_PID")"
	n0=$(cpu_ns "$CXD_PID") t0=$(cxvm_now_ms) c0=$(cpu_ticks_ms "$CXD_PID") s0=$(slices "$CXD_PID")
	sleep "$IDLE_SECONDS"
	n1=$(cpu_ns "$CXD_PID") t1=$(cxvm_now_ms) c1=$(cpu_ticks_ms "$CXD_PID") s1=$(slices "$CXD_PID")
	cxvm_log "$name idle end, threads: $(per_thread "$CXD_PID")"
	cxvm_result "idle_wakeups_$name" $((s1 - s0))
	cxvm_result "idle_cpu_ns_$name" $((n1 - n0))
	cxvm_result "idle_cpu_ticks_ms_$name" $((c1 - c0))
	cxvm_result "idle_wall_ms_$name" $((t1 - t0))
	cxvm_result "idle_rss_kb_$name" "$(awk '/^VmRSS:/ {print $2}' "/proc/$CXD_PID/status")"
	cxd_stop
	cxvm_log "$name idle: $(((n1 - n0) / 1000)) us CPU in $((t1 - t0)) ms"
}

for spec in $DAEMONS; do
	name=${spec%%=*}
	CXD_BIN=${spec#*=}
	[ -x "$CXD_BIN" ] || cxvm_fail "no daemon binary $CXD_BIN"
	CXD_LOG=$CXVM_OUT/daemon-$name.log
	names+=("\"$name\"")
	if [ "$N" -gt 0 ]; then latency_run "$name"; fi
done
runs=()
for size in $IDLE_CGROUPS; do
	idle_tree "$size" "${IDLE_LIMITED:-$((size * 5 / 100))}"
	cxvm_result "idle_cgroups_$size" "$(find "$CXVM_CGROOT" -mindepth 1 -type d | wc -l)"
	cxvm_result "idle_limited_$size" \
		"$(grep -l wbps "$CXVM_CGROOT"/idle/*/*/io.max "$CXVM_CGROOT"/cg1/io.max | wc -l)"
	for det in $IDLE_DETECTORS; do
		for spec in $DAEMONS; do
			name=${spec%%=*}
			CXD_BIN=${spec#*=}
			CXD_LOG=$CXVM_OUT/daemon-idle-${name}_${det}_$size.log
			idle_run "$name" "$det" "$size"
			runs+=("\"${name}_${det}_$size\"")
		done
	done
done
cxvm_result idle_runs "[$(IFS=,; echo "${runs[*]}")]"
cxvm_result daemons "[$(IFS=,; echo "${names[*]}")]"
cxvm_log ok
