#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The test command of the README: installs what is needed, checks formatting, builds the
# default and the ASan/UBSan configurations, and runs every tier (unit, fuzz smoke, dbus, vm);
# in a Debian 13 root it makes itself it also builds and runs the unit and dbus tiers.
# Ends with ctest's summary line for the VM tier of the default build, then the phase times.
set -euo pipefail
cd "$(dirname "$0")/.."

t_start=$SECONDS
phases=()
phase() { # NAME: closes the previous phase and opens NAME
  local now=$SECONDS
  if [ -n "${phase_name:-}" ]; then phases+=("$(printf '%-44s %5d s' "$phase_name" $((now - phase_t0)))"); fi
  phase_name=$1 phase_t0=$now
  [ "$1" = end ] || echo "== $1"
}

phase "install packages"
bash scripts/install-deps.sh

jobs=$(nproc)
# Network- and disk-bound set-up runs behind the compiles (about 8 min on a fresh machine:
# debootstrap and apt in the trixie root; Debian's 6.12 and 7.2 kernels and node exporter for
# the VM tier); the steps that use them wait for them below. All are cached, so later runs
# finish at once.
prefetch_dir=$(mktemp -d)
trap 'rm -rf "$prefetch_dir"' EXIT
bash scripts/debian13-root.sh --root-only >"$prefetch_dir/root.log" 2>&1 &
root_pid=$!
bash scripts/fetch-kernel.sh --series 6.12 >"$prefetch_dir/kernel.log" 2>&1 &
kernel_pid=$!
bash scripts/fetch-kernel.sh --series 7.2 >"$prefetch_dir/kernel72.log" 2>&1 &
kernel72_pid=$!
bash scripts/fetch-node-exporter.sh >"$prefetch_dir/node-exporter.log" 2>&1 &
exporter_pid=$!
# The OCI image's base (ctest deploy.image): Debian's runtime libraries, extracted (~15 s).
bash scripts/build-image.sh --base-only >"$prefetch_dir/image-base.log" 2>&1 &
image_base_pid=$!
wait_prefetch() { # PID LOG WHAT
  if ! wait "$1"; then
    echo "test.sh: $3 failed:" >&2
    tail -n 40 "$2" >&2
    exit 1
  fi
  sed "s/^/  [$3] /" "$2"
}

phase "clang-format check"
git ls-files '*.cpp' '*.h' | xargs -r clang-format --dry-run --Werror

phase "ASan/UBSan build (unit tier)"
cmake --preset asan >/dev/null
# Only what the unit tier runs: the unit test binaries, plus the programs whose command lines,
# man pages and completion the unit tier checks (cli.exit_codes, man.pages, completion.bash;
# the man pages are rendered with cxiosyncd and cxiosyncctl). The dbus tier is covered by the
# default build below, and building everything twice would double CI's compile time.
unit_targets=$(for d in tests/unit/*/; do printf 'unit_%s ' "$(basename "$d")"; done)
unit_targets="$unit_targets cxiosyncd cxiosyncctl cxiosync-loop cxiosync-nbd-server cxiosync-observe"
# shellcheck disable=SC2086
cmake --build --preset asan -j"$jobs" --target $unit_targets

phase "default build"
cmake --preset default >/dev/null
cmake --build --preset default -j"$jobs"

# The tests run only once the background set-up is done: a test beside dpkg's unpacking
# would have its timings skewed.
phase "wait for the trixie root, the 6.12 and 7.2 kernels, node exporter, image base"
wait_prefetch "$root_pid" "$prefetch_dir/root.log" "trixie root"
wait_prefetch "$kernel_pid" "$prefetch_dir/kernel.log" "6.12 kernel"
wait_prefetch "$kernel72_pid" "$prefetch_dir/kernel72.log" "7.2 kernel"
wait_prefetch "$exporter_pid" "$prefetch_dir/node-exporter.log" "node exporter"
wait_prefetch "$image_base_pid" "$prefetch_dir/image-base.log" "image base"

phase "ASan/UBSan unit tier"
# Every test step from here runs even if one before it fails (one CI run shows every
# failure); any failure fails the script.
rc=0
ctest --preset asan -L unit -j"$jobs" --timeout 120 || rc=$?

phase "Debian 13 (trixie) build, unit and dbus tiers"
# The root made above (debootstrap from Debian's archive, cached in /var/cache/cxiosync-ci;
# never the host's apt sources or packages); only what changed is rebuilt.
CXIOSYNC_TRIXIE_JOBS=$jobs bash scripts/debian13-root.sh || rc=$?

phase "default build: every tier but the VM tier"
# The other tiers first and alone: a unit or dbus test beside a TCG guest skews its timings.
ctest --preset default --timeout 900 -LE '^vm$' || rc=$?
phase "VM tier (host kernel, 7.2 and 6.12, two boots at a time)"
# Kernel matrix: every scenario on the host kernel and Debian's 7.2, the Debian 13 guest and
# the throttling and loop scenarios on 6.12 (fetched above by scripts/fetch-kernel.sh into a
# cache outside the tree; see tests/vm/CMakeLists.txt and tests/vm/README.md).
ctest --preset default --timeout 900 -L '^vm$' -j2 || rc=$?
phase end
echo "== phase times"
printf '%s\n' "${phases[@]}"
printf '%-44s %5d s\n' total $((SECONDS - t_start))
exit "$rc"
