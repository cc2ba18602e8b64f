#!/usr/bin/env bash
# The test command of the README: installs what is needed, checks formatting, builds the
# default and the ASan/UBSan configurations, and runs every tier (unit, fuzz smoke, dbus, vm).
# Ends with ctest's summary line for the full default build.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

echo "== clang-format check"
git ls-files '*.cpp' '*.h' | xargs -r clang-format --dry-run --Werror

jobs=$(nproc)

echo "== ASan/UBSan build: unit tier"
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$jobs"
ctest --preset asan -L unit -j"$jobs" --timeout 120

echo "== default build: all tiers"
cmake --preset default >/dev/null
cmake --build --preset default -j"$jobs"
ctest --preset default --timeout 900
