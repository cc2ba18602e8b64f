# SPDX-License-Identifier: GPL-2.0-or-later
# Races with a concurrent `losetup -f`: both sides get devices, none fails, cxiosync never
# clears a device the other side won, nothing leaks.
. "$CXVM_LIB"
. "$CXVM_DIR/scenarios/loop_lib.inc"
cxl_no_leaks
a=$CXVM_SCRATCH_MNT/a.img b=$CXVM_SCRATCH_MNT/b.img
truncate -s 16M "$a" "$b"
n=${CXL_RACE_N:-24}
(for _ in $(seq "$n"); do losetup -f "$b" || echo LOSETUP_FAIL; done) >/tmp/losetup.log 2>&1 &
lpid=$!
fails=0 retried=0
for _ in $(seq "$n"); do
	if out=$(cxl --json add "$a" 2>&1); then
		[ "$(jq -r .attempts <<<"$out")" -gt 1 ] && retried=$((retried + 1))
	else
		fails=$((fails + 1))
		cxvm_log "add failed: $out"
	fi
done
wait $lpid
grep -q LOSETUP_FAIL /tmp/losetup.log && cxvm_fail "losetup failed: $(cat /tmp/losetup.log)"
cxl_expect "cxiosync failures" "$fails" 0
cxl_expect "ours" "$(cxl --json list | jq '.loopdevices | length')" "$n"
cxl_expect "theirs" "$(losetup -j "$b" | wc -l)" "$n"
cxl_expect "ours back-file" "$(cxl --json list | jq -r '.loopdevices[]."back-file"' | sort -u)" "$a"
cxvm_result race "{\"n\": $n, \"retried\": $retried}"
cxvm_log "retried setups: $retried of $n"
for d in $(cxl --json list | jq -r '.loopdevices[].name'); do cxl detach "$d" >/dev/null || cxvm_fail "detach $d"; done
cxl_expect "theirs untouched" "$(losetup -j "$b" | wc -l)" "$n"
losetup -j "$b" | cut -d: -f1 | xargs -r -n1 losetup -d
cxl_no_leaks
cxvm_log ok
