#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The test command of the README: installs what is needed, checks formatting, builds the
# default and the ASan/UBSan configurations, and runs every tier (unit, fuzz smoke, dbus, vm);
# in a Debian 13 root it makes itself it also builds and runs the unit, fuzz smoke, dbus tiers.
# Ends with ctest's summary line for the VM tier of the default build.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

echo "== clang-format check"
git ls-files '*.cpp' '*.h' | xargs -r clang-format --dry-run --Werror

jobs=$(nproc)

echo "== ASan/UBSan build: unit tier"
cmake --preset asan >/dev/null
# Only what the unit tier runs: the unit test binaries, plus the programs whose command lines,
# man pages and completion the unit tier checks (cli.exit_codes, man.pages, completion.bash;
# the man pages are rendered with cxiosyncd and cxiosyncctl). The dbus tier is covered by the
# default build below, and building everything twice would double CI's compile time.
unit_targets=$(for d in tests/unit/*/; do printf 'unit_%s ' "$(basename "$d")"; done)
unit_targets="$unit_targets cxiosyncd cxiosyncctl cxiosync-loop cxiosync-nbd-server cxiosync-observe"
# shellcheck disable=SC2086
cmake --build --preset asan -j"$jobs" --target $unit_targets
ctest --preset asan -L unit -j"$jobs" --timeout 120

echo "== Debian 13 (trixie: g++ 14, sdbus-c++ 2.x, clang 19): unit, fuzz smoke and dbus tiers"
# In a trixie root this script makes and caches in /var/cache/cxiosync-ci (never the host's
# apt sources or packages); the first run makes it (about 8 min), later runs reuse it and
# rebuild only what changed.
CXIOSYNC_TRIXIE_JOBS=$jobs bash scripts/debian13-root.sh

echo "== default build: all tiers"
cmake --preset default >/dev/null
cmake --build --preset default -j"$jobs"
# --- VM tier: two boots at a time (kernel matrix: host kernel + Debian's 6.12, fetched once
# into a cache outside the tree by scripts/fetch-kernel.sh; see tests/vm/CMakeLists.txt).
# The other tiers first and alone: a unit or dbus test beside a TCG guest skews its timings.
# Both run even if the first fails (as one ctest did), and either failing fails the script.
rc=0
ctest --preset default --timeout 900 -LE '^vm$' || rc=$?
ctest --preset default --timeout 900 -L '^vm$' -j2 || rc=$?
# --- end VM tier
exit "$rc"
