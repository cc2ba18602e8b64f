# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark, guest part of tests/bench/loop_workers.sh: the 2020 "multiple loop workers"
# experiment (4 concurrent sequential readers with direct I/O on a file in ext4 on a loop
# device) against a latency-bound backing store.
#
#   slow store:  brd ramdisk under dm-delay (every read delayed CXL_BENCH_DELAY_MS; writes
#                not delayed, so preparing the image is quick), ext4 on it, image file in it
#   upper:       ext4 made once inside the image, with one large file written through
#   per row:     attach the image (kernel loop buffered / kernel loop direct I/O / nbd with
#                1, 2, 4, 8 workers), mount ro, drop caches, fio: 4 jobs, sequential read,
#                direct=1, bs, distinct regions, time-based; umount, detach.
# Results: result.json (MB/s per row and per-job bytes, to see that no job wrapped around).
# CXL_BENCH_VIA=ctl: every row's device is set up and detached through cxiosyncctl and a
# cxiosyncd on a system bus (`loop add --backend nbd --workers N`, issue 17), not through the
# development tool and a hand-started server.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
via=${CXL_BENCH_VIA:-tool}
delay=${CXL_BENCH_DELAY_MS:-50}
dur=${CXL_BENCH_SECONDS:-6}
bs=${CXL_BENCH_BS:-256k}
region_mb=${CXL_BENCH_REGION_MB:-48}
readers=${CXL_BENCH_READERS:-4}
reps=${CXL_BENCH_REPS:-1}
rows=${CXL_BENCH_ROWS:-"loop_buffered loop_dio loop_dio_qd4 nbd1 nbd2 nbd4 nbd8"}
NBD_SRV=$CXIOSYNC_BUILD_DIR/daemon/cxiosync-nbd-server
cxvm_result delay_ms "$delay"
cxvm_result seconds "$dur"
cxvm_result_str bs "$bs"
cxvm_result readers "$readers"
cxvm_result region_mb "$region_mb"
cxvm_result_str kernel "$CXVM_KERNEL"
cxvm_result nproc "$(nproc)"
cxvm_result_str via "$via"
modprobe nbd || cxvm_fail "modprobe nbd"
CTL=$CXIOSYNC_BUILD_DIR/dbus/cxiosyncctl
if [ "$via" = ctl ]; then
	. "$CXVM_DIR/scenarios/daemon_common.inc"
	mkdir -p /run/dbus /usr/share/dbus-1/system.d
	cp "$CXIOSYNC_SOURCE_DIR/packaging/org.cxiosync1.conf" /usr/share/dbus-1/system.d/ ||
		cxvm_fail "cannot install the bus policy"
	dbus-daemon --system --fork || cxvm_fail "dbus-daemon --system did not start"
	for _ in $(seq 100); do [ -S /run/dbus/system_bus_socket ] && break; sleep 0.1; done
	cxvm_cgroup_setup
	cxd_config <"$CXIOSYNC_SOURCE_DIR/packaging/cxiosync.yaml"
	cxd_start --bus=system
fi
# ctl_add ARGS...: cxiosyncctl loop add ARGS (JSON); sets $dev and $ctl_workers.
ctl_add() {
	local out
	out=$("$CTL" loop add "$@" --json=short) || { echo "cxiosyncctl loop add $*: $out" >&2 && return 1; }
	dev=$(jq -r .device <<<"$out")
	ctl_workers=$(jq -r .workers <<<"$out")
}
modprobe brd rd_nr=1 rd_size=$(((readers * region_mb + 96) * 1024)) || cxvm_fail "modprobe brd"
modprobe dm-delay || cxvm_fail "modprobe dm-delay"
export DM_DISABLE_UDEV=1
sectors=$(blockdev --getsz /dev/ram0)
dmsetup create --noudevsync cxslow --table "0 $sectors delay /dev/ram0 0 $delay /dev/ram0 0 0" ||
	cxvm_fail "dmsetup create"
slow=/dev/mapper/cxslow
[ -b $slow ] || slow=/dev/dm-0
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 $slow || cxvm_fail "mkfs slow"
mkdir -p /mnt/back /mnt/up
mount -o noinit_itable $slow /mnt/back || cxvm_fail "mount slow"
img=/mnt/back/upper.img
truncate -s $(((readers * region_mb + 64) * 1024 * 1024)) $img
# The upper filesystem and its big file, written once (through a direct-I/O loop device).
dev=$(cxl add "$img") || cxvm_fail "cxl add (prepare)"
mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$dev" || cxvm_fail "mkfs upper"
mount "$dev" /mnt/up || cxvm_fail "mount upper"
cxvm_log "writing $((readers * region_mb)) MiB"
dd if=/dev/urandom of=/mnt/up/big bs=1M count=$((readers * region_mb)) oflag=direct status=none ||
	cxvm_fail "write big file"
umount /mnt/up && cxl detach "$dev" >/dev/null || cxvm_fail "detach (prepare)"
sync

nbd_pid=
attach() { # ROW -> sets $dev (no command substitution: the server must not hold its pipe)
	dev=
	if [ "$via" = ctl ]; then
		case $1 in
		loop_buffered) ctl_add "$img" --direct-io=off ;;
		loop_dio) ctl_add "$img" --direct-io=on ;;
		loop_dio_qd*) ctl_add "$img" --direct-io=on --queue-depth "${1#loop_dio_qd}" ;;
		nbd*)
			ctl_add "$img" --backend nbd --workers "${1#nbd}" || return 1
			[ "$ctl_workers" = "${1#nbd}" ] || { echo "workers read back: $ctl_workers" >&2 && return 1; }
			;;
		esac
		[ -n "$dev" ]
		return
	fi
	case $1 in
	loop_buffered) dev=$(cxl add --direct-io=off "$img") ;;
	loop_dio) dev=$(cxl add --direct-io=on "$img") ;;
	loop_dio_qd*) dev=$(cxl add --direct-io=on --queue-depth "${1#loop_dio_qd}" "$img") ;;
	nbd*)
		rm -f /tmp/nbd.status
		"$NBD_SRV" --file "$img" --workers "${1#nbd}" --status-fd 3 3>/tmp/nbd.status \
			</dev/null >/dev/null 2>>/tmp/nbd.log &
		nbd_pid=$!
		local k line=
		for ((k = 0; k < 600; k++)); do
			[ -s /tmp/nbd.status ] && break
			sleep 0.1
		done
		read -r line </tmp/nbd.status
		case $line in ready*) ;; *) echo "nbd server: $line" >&2 && return 1 ;; esac
		line=${line#*index=}
		dev=/dev/nbd${line%% *}
		;;
	esac
	[ -n "$dev" ]
}
detach() { # ROW DEV
	if [ "$via" = ctl ]; then
		"$CTL" loop detach "$2" >/dev/null
		return
	fi
	case $1 in
	loop*) cxl detach "$2" >/dev/null ;;
	nbd*) kill -TERM "$nbd_pid" && wait "$nbd_pid" ;;
	esac
}

for r in $(seq "$reps"); do
	for row in $rows; do
		attach "$row" || cxvm_fail "attach $row"
		q=/sys/block/${dev#/dev/}/queue
		info="max_sectors_kb=$(cat $q/max_sectors_kb) max_segments=$(cat $q/max_segments) lbs=$(cat $q/logical_block_size)"
		case $row in
		loop*) info="$info dio=$(cxl_sys "$dev" loop/dio) nr_requests=$(cxl_sys "$dev" queue/nr_requests)" ;;
		nbd*) info="$info hw_queues=$(ls /sys/block/${dev#/dev/}/mq | wc -l)${ctl_workers:+ workers_read_back=$ctl_workers}" ;;
		esac
		mount -o ro,noload "$dev" /mnt/up || cxvm_fail "mount $row"
		read -r nr0 _ nsec0 _ </sys/block/${dev#/dev/}/stat # counters survive detach: diff
		sync
		echo 3 >/proc/sys/vm/drop_caches
		fio --name=r --filename=/mnt/up/big --rw=read --direct=1 --bs="$bs" --numjobs="$readers" \
			--size=${region_mb}m --offset_increment=${region_mb}m --time_based --runtime="$dur" \
			--ioengine=psync --output-format=json >/tmp/fio.json 2>/tmp/fio.err ||
			cxvm_fail "fio $row: $(cat /tmp/fio.err)"
		bytes=$(jq '[.jobs[].read.io_bytes] | add' /tmp/fio.json)
		perjob=$(jq -c '[.jobs[].read.io_bytes]' /tmp/fio.json)
		runtime=$(jq '[.jobs[].read.runtime] | max' /tmp/fio.json)
		lat=$(jq '[.jobs[].read.clat_ns.mean] | add / length / 1000000' /tmp/fio.json)
		# Requests the device completed, and their mean size (how the kernel split the reads).
		read -r nr _ nsec _ </sys/block/${dev#/dev/}/stat
		nr=$((nr - nr0)) nsec=$((nsec - nsec0))
		req_kib=$(awk -v n="$nr" -v s="$nsec" 'BEGIN { printf "%.0f", n ? s / 2 / n : 0 }')
		umount /mnt/up || cxvm_fail "umount $row"
		detach "$row" "$dev" || cxvm_fail "detach $row"
		mbs=$(awk -v b="$bytes" -v t="$runtime" 'BEGIN { printf "%.2f", b / 1e6 / (t / 1000) }')
		cxvm_log "round $r $row ($info, $nr requests of ~${req_kib} KiB): $mbs MB/s, per job $perjob bytes, mean lat ${lat} ms"
		cxvm_result "r${r}_${row}" "{\"mbs\": $mbs, \"bytes\": $bytes, \"runtime_ms\": $runtime, \"per_job\": $perjob, \"clat_ms\": $lat, \"info\": \"$info\", \"device_reads\": $nr, \"device_req_kib\": $req_kib}"
	done
done
cxvm_result reps "$reps"
cxvm_result_str rows "$rows"
[ -s /tmp/nbd.log ] && cxvm_save /tmp/nbd.log nbd.log
umount /mnt/back
dmsetup remove --noudevsync cxslow
[ "$via" = ctl ] && cxd_stop
cxl_no_leaks
for f in /sys/block/nbd*/pid; do [ -e "$f" ] && cxvm_fail "nbd device left connected: $f"; done
cxvm_log ok
