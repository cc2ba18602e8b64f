# SPDX-License-Identifier: GPL-2.0-or-later
# Detection latency benchmark (issue 4, "Performance"): sync entry -> syncer in the
# observer's snapshot, for each backend, over SENSE_N (default 20) syncs. A persistent
# python3 syncer in cg2 stamps the wall clock right before each sync(2), so process
# start-up is not counted; cg1 (wbps=1 MiB/s) holds 1 MiB of fresh dirty data each time.
# Numbers: sense_latency.check.py (table + latency.json in the result dir).
. "$CXVM_LIB"
OBS=$CXIOSYNC_BUILD_DIR/daemon/cxiosync-observe
[ -x "$OBS" ] || cxvm_fail "no $OBS"
n=${SENSE_N:-20}
poll=${SENSE_POLL_MS:-100}
mnt=$CXVM_SCRATCH_MNT
cxvm_cgroup_setup
cxvm_cg_create cg1 cg2
cxvm_io_max cg1 "wbps=1048576"
cxvm_result n "$n"
cxvm_result poll_ms "$poll"
backends=()
for backend in tracefs procfs; do
	obs_out=$CXVM_OUT/observe-$backend.jsonl
	stamps=$CXVM_OUT/stamps-$backend.txt
	: >"$stamps"
	"$OBS" --json --changes --detector="$backend" --poll-interval-ms="$poll" \
		--min-dirty-bytes=262144 >"$obs_out" 2>"$CXVM_OUT/observe-$backend.err" &
	obs=$!
	for _ in $(seq 100); do [ -s "$obs_out" ] && break; sleep 0.1; done
	fifo=/tmp/sense-go-$backend
	cxvm_stamped_syncer cg2 "$fifo" "$stamps"
	py=$!
	exec 3>"$fifo"
	for i in $(seq "$n"); do
		cxvm_dirty cg1 "$mnt/dirty-$i" 1
		cxvm_wait_dirty cg1 524288 3 || true
		echo go >&3
		for _ in $(seq 300); do [ "$(wc -l <"$stamps")" -ge "$i" ] && break; sleep 0.05; done
		sleep 0.2
	done
	exec 3>&-
	wait "$py"
	sleep 0.3
	kill -TERM "$obs"
	wait "$obs"
	rm -f "$fifo" "$mnt"/dirty-*
	cxvm_log "$backend: $(wc -l <"$stamps") syncs, $(wc -l <"$obs_out") observer lines"
	backends+=("\"$backend\"")
done
cxvm_result backends "[$(IFS=,; echo "${backends[*]}")]"
