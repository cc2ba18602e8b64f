#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Detection latency of both sync detectors on a real kernel (VM, ~3 min under TCG):
#   tests/bench/detect_latency.sh BUILD_DIR [OUT.json]
# Runs tests/vm/scenarios/sense_latency.sh and copies its latency.json to OUT.json.
set -eu
build=${1:?usage: detect_latency.sh BUILD_DIR [OUT.json]}
out=${2:-detect_latency.json}
here=$(cd "$(dirname "$0")" && pwd)
res=$(mktemp -d)
python3 "$here/../vm/vmrun.py" --build-dir "$build" --results-dir "$res" --timeout 900 \
	--scenario-timeout 800 sense_latency
cp "$res/sense_latency/latency.json" "$out"
echo "wrote $out"
