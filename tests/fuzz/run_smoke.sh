#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs one libFuzzer binary briefly: run_smoke.sh FUZZER SEED_DIR FIXTURES_DIR SECONDS
# The checked-in seeds are never modified: new inputs go to a temporary corpus. Exits
# non-zero (and prints the reproducer path) when the fuzzer finds a crash, leak, UB, timeout
# or invariant violation.
set -euo pipefail
fuzzer=$1 seeds=$2 fixtures=$3 seconds=$4
if [[ ! -x $fuzzer ]]; then
  echo "fuzzer binary missing: $fuzzer (build the cxiosync_fuzzers target)" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cxiosync-fuzz.XXXXXX")
keep=0
cleanup() { if [[ $keep == 0 ]]; then rm -rf "$work"; fi; }
trap cleanup EXIT
mkdir -p "$work/corpus" "$work/artifacts"
dirs=("$work/corpus")
[[ -d $seeds ]] && dirs+=("$seeds")
[[ -d $fixtures ]] && dirs+=("$fixtures")
set +e
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${dirs[@]}" >"$work/log" 2>&1
rc=$?
set -e
if [[ $rc != 0 ]]; then
  keep=1
  tail -n 60 "$work/log"
  echo "FAIL: $(basename "$fuzzer") exited $rc; reproducers in $work/artifacts:" >&2
  ls -l "$work/artifacts" >&2
  exit 1
fi
grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done )" "$work/log" || true
echo "OK: $(basename "$fuzzer"), ${seconds}s, no crash"
