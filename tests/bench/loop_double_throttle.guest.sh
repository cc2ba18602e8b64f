# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark, guest part of tests/bench/loop_double_throttle.sh (kept out of tests/vm/scenarios
# so that the vm test tier does not run it): the double dirty throttling
# of a loop device over page cache (the 2017 PF_LESS_THROTTLE case). mkfs + mount + write
# many files totalling several x vm.dirty_bytes + umount, timed on:
#   raw          ext4 directly on the virtio disk
#   loop_buffered  ext4 on a kernel loop device, buffered (losetup --direct-io=off)
#   loop_cxiosync  ext4 on a loop device set up by cxiosync-loop (defaults: direct I/O)
# Rounds are interleaved (raw, buffered, cxiosync) x REPS. Results: result.json.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
reps=${CXL_BENCH_REPS:-3}
files=${CXL_BENCH_FILES:-256}
file_kib=${CXL_BENCH_FILE_KIB:-128}
dirty=${CXL_BENCH_DIRTY_BYTES:-4194304}
echo "$dirty" >/proc/sys/vm/dirty_bytes
echo $((dirty / 4)) >/proc/sys/vm/dirty_background_bytes
cxvm_result dirty_bytes "$dirty"
cxvm_result total_bytes $((files * file_kib * 1024))
cxvm_result files "$files"
cxvm_result reps "$reps"
cxvm_result_str kernel "$CXVM_KERNEL"
mkdir -p /tmp/bm
# File contents built once: the write loop below uses only shell builtins (no fork per file,
# which under TCG would cost more than the I/O being measured).
blob=$(head -c $((file_kib * 1024)) /dev/zero | tr '\0' x)

# one_run TARGET_DEV -> prints ms for mkfs + mount + write + umount
one_run() {
	local dev=$1 t0 t1 i
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=${EPOCHREALTIME/./}
	mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$dev" >/dev/null || return 1
	mount -o noinit_itable "$dev" /tmp/bm || return 1
	for ((i = 0; i < files; i++)); do
		printf '%s' "$blob" >"/tmp/bm/f$i" || return 1
	done
	umount /tmp/bm || return 1
	t1=${EPOCHREALTIME/./}
	echo $(((t1 - t0) / 1000))
}

raw=() buf=() cx=() cx_dio=() buf_dio=() buf_cache=() cx_cache=()
# Bytes of the backing image in the page cache after the run: the second copy a buffered
# loop device keeps (direct I/O keeps none).
cached() { fincore -b -n -o RES "$1" 2>/dev/null | tr -d ' ' || echo null; }
umount "$CXVM_SCRATCH_MNT"
for r in $(seq "$reps"); do
	# raw: the whole scratch disk
	umount "$CXVM_SCRATCH_MNT" 2>/dev/null
	ms=$(one_run "$CXVM_SCRATCH_DEV") || cxvm_fail "raw run $r"
	raw+=("$ms")
	cxvm_log "round $r raw: $ms ms"
	# the loop runs: an image file on a fresh ext4 on the same disk
	mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$CXVM_SCRATCH_DEV" &&
		mount -o noinit_itable "$CXVM_SCRATCH_DEV" "$CXVM_SCRATCH_MNT" || cxvm_fail "scratch"
	img=$CXVM_SCRATCH_MNT/bench.img
	fallocate -l 256M "$img" || cxvm_fail fallocate
	dev=$(losetup -f --show --direct-io=off "$img") || cxvm_fail "losetup"
	buf_dio+=("$(cxl_sys "$dev" loop/dio)")
	ms=$(one_run "$dev") || cxvm_fail "buffered run $r"
	buf_cache+=("$(cached "$img")")
	losetup -d "$dev"
	buf+=("$ms")
	cxvm_log "round $r loop buffered: $ms ms, backing file cached ${buf_cache[-1]} bytes"
	dev=$(cxl add "$img") || cxvm_fail "cxiosync-loop add"
	cx_dio+=("$(cxl_sys "$dev" loop/dio)")
	ms=$(one_run "$dev") || cxvm_fail "cxiosync run $r"
	cx_cache+=("$(cached "$img")")
	cxl detach "$dev" >/dev/null || cxvm_fail "detach"
	cx+=("$ms")
	cxvm_log "round $r loop cxiosync (dio=${cx_dio[-1]}): $ms ms, backing file cached ${cx_cache[-1]} bytes"
	umount "$CXVM_SCRATCH_MNT"
done
js() { local IFS=,; echo "[$*]"; }
cxvm_result raw_ms "$(js "${raw[@]}")"
cxvm_result loop_buffered_ms "$(js "${buf[@]}")"
cxvm_result loop_cxiosync_ms "$(js "${cx[@]}")"
cxvm_result loop_buffered_dio "$(js "${buf_dio[@]}")"
cxvm_result loop_cxiosync_dio "$(js "${cx_dio[@]}")"
cxvm_result loop_buffered_backing_cached "$(js "${buf_cache[@]}")"
cxvm_result loop_cxiosync_backing_cached "$(js "${cx_cache[@]}")"
cxl_no_leaks
cxvm_log ok
