#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian 13 (trixie) job of scripts/test.sh: builds this tree in a trixie root (g++ 14,
# sdbus-c++ 2.x, yaml-cpp 0.8, spdlog 1.15) and runs the unit and dbus tiers there. The fuzz
# targets are built and smoke-tested on the host only: they fuzz the same pure parsers, and the
# clang sub-build with its tier cost about 3 min of CI's 45 in this root.
#
#   debian13-root.sh [--root-only] [--build-only] [--deb]
#
# --deb builds (incrementally) and then packages that build with scripts/build-deb.sh
# --prebuilt into /cxiosync-build/deb/ inside the root, without running the tests: the package
# the Debian 13 guest of the VM tier installs (ctest debian13.deb, a fixture of
# vm612.debian13_systemd, which boots this root as the guest's /).
#
# The root is made with debootstrap from Debian's own archive, at the mirror the host's apt
# sources already use, and cached outside the source tree ($CXIOSYNC_TRIXIE_ROOT, default
# /var/cache/cxiosync-ci/trixie-root). It is remade only when the package list, suite or
# mirror below change (a stamp file records them). The host's apt configuration and installed
# packages are never touched: everything is installed inside the root.
#
# The build directory lives inside the root (/cxiosync-build), so a re-run compiles only what
# changed. Each run happens in a private mount and pid namespace (unshare): the bind mounts of
# /proc, /dev, /sys and the source vanish with it, and so does every process the tests leave.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)

SUITE=trixie
ROOT=${CXIOSYNC_TRIXIE_ROOT:-/var/cache/cxiosync-ci/trixie-root}
JOBS=${CXIOSYNC_TRIXIE_JOBS:-2}
# Bumped when the way the root is made changes (not only the list).
ROOT_FORMAT=1
PACKAGES=(
  # toolchain (g++ 14)
  build-essential cmake ninja-build pkg-config
  # libraries
  libsdbus-c++-dev libsdbus-c++-bin libsystemd-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev nlohmann-json3-dev
  # the package (build-deb.sh --prebuilt: dpkg-buildpackage + dh) and its man pages (scdoc;
  # the man.pages test renders them with man-db/groff and col)
  debhelper scdoc man-db groff-base bsdextrautils
  # what the tiers run: a private dbus-daemon, busctl (package systemd), python3, jq, losetup
  dbus systemd python3 jq procps util-linux mount kmod
)

root_only=0
build_only=0
deb=0
for a in "$@"; do
  case $a in
    --root-only) root_only=1 ;;
    --build-only) build_only=1 ;;
    --deb) deb=1 ;;
    *)
      echo "usage: $0 [--root-only] [--build-only] [--deb]" >&2
      exit 2
      ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "debian13-root: needs root (debootstrap, chroot, mounts)" >&2
  exit 1
fi

# The first Debian archive URI the host's apt sources name for its own release: the mirror
# this machine is known to reach. CXIOSYNC_DEBIAN_MIRROR overrides it.
host_mirror() {
  local codename files=()
  # shellcheck disable=SC1091  # the host's file, read at run time
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] || return 0
  awk -v want="$codename" '
    # one-line format: deb [opts] URI SUITE COMPONENTS...
    /^[ \t]*deb[ \t]/ {
      n = split($0, w, /[ \t]+/); i = 2
      if (w[i] == "") i++
      if (substr(w[i], 1, 1) == "[") { while (i <= n && w[i] !~ /\]$/) i++; i++ }
      if (w[i + 1] == want) { print w[i]; exit }
      next
    }
    # deb822 format: a stanza ends at a blank line
    /^[ \t]*$/ { if (uris != "" && suites ~ ("(^| )" want "( |$)") && types ~ /deb( |$)/) { split(uris, u, " "); print u[1]; exit } uris = suites = types = ""; next }
    /^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
    /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
    /^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
    END { if (uris != "" && suites ~ ("(^| )" want "( |$)") && types ~ /deb( |$)/) { split(uris, u, " "); print u[1] } }
  ' "${files[@]}" | head -n1
}

MIRROR=${CXIOSYNC_DEBIAN_MIRROR:-$(host_mirror)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
STAMP="format=$ROOT_FORMAT suite=$SUITE mirror=$MIRROR packages=${PACKAGES[*]}"

mkdir -p "$(dirname "$ROOT")"
exec 9>"$ROOT.lock"
flock 9

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }

# Runs a command chrooted into $1 in a private mount + pid namespace with /proc, /dev, /sys,
# a fresh /tmp and (read-only) the source tree at /src. Leaves no mount behind: the namespace
# dies with the command, and its mounts with it.
in_root() {
  local root=$1
  shift
  # shellcheck disable=SC2016  # expanded by the inner shell, from its own arguments
  unshare --mount --pid --fork --kill-child --propagation private -- \
    /bin/bash -euo pipefail -c '
      root=$1 src=$2; shift 2
      mount -t proc proc "$root/proc"
      mount --rbind /dev "$root/dev"
      mount -t sysfs sysfs "$root/sys"
      mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
      mkdir -p "$root/src"
      mount --bind "$src" "$root/src"
      mount -o remount,bind,ro "$root/src"
      cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
      exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
    ' in_root "$root" "$SRC" "$@"
}

make_root() {
  local new="$ROOT.new" t0
  t0=$(now)
  if ! command -v debootstrap >/dev/null; then
    echo "debian13-root: debootstrap missing (scripts/install-deps.sh installs it)" >&2
    exit 1
  fi
  rm -rf "$new"
  echo "== debian13: debootstrap $SUITE from $MIRROR into $new"
  debootstrap --variant=minbase "$SUITE" "$new" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 || {
    tail -n 30 "$ROOT.debootstrap.log" >&2
    exit 1
  }
  # No service starts inside the root (dbus, systemd postinsts).
  printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
  chmod 755 "$new/usr/sbin/policy-rc.d"
  echo "== debian13: apt-get install ${#PACKAGES[@]} packages in the root"
  in_root "$new" apt-get update -qq
  in_root "$new" apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >"$ROOT.apt.log" 2>&1 || {
    tail -n 30 "$ROOT.apt.log" >&2
    exit 1
  }
  in_root "$new" apt-get clean
  printf '%s\n' "$STAMP" >"$new/.cxiosync-root-stamp"
  rm -rf "$ROOT"
  mv "$new" "$ROOT"
  echo "== debian13: root made in $(elapsed "$t0") s ($(du -sh "$ROOT" | cut -f1))"
}

if [ -f "$ROOT/.cxiosync-root-stamp" ] && [ "$(cat "$ROOT/.cxiosync-root-stamp")" = "$STAMP" ]; then
  echo "== debian13: cached root $ROOT"
else
  make_root
fi
[ $root_only = 1 ] && exit 0

t0=$(now)
echo "== debian13: build (g++ $(in_root "$ROOT" g++ -dumpversion), -j$JOBS) in $ROOT/cxiosync-build"
in_root "$ROOT" /bin/bash -euo pipefail -c "
  cmake -S /src -B /cxiosync-build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_INSTALL_PREFIX=/usr -DCXIOSYNC_FUZZ_AUTO=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG' >/cxiosync-build.configure.log 2>&1 ||
    { tail -n 40 /cxiosync-build.configure.log; exit 1; }
  cmake --build /cxiosync-build -j$JOBS -- -k 0  # every error of g++ 14 in one run
"
echo "== debian13: build took $(elapsed "$t0") s"
[ $build_only = 1 ] && exit 0
if [ $deb = 1 ]; then
  t0=$(now)
  in_root "$ROOT" bash -c 'rm -rf /cxiosync-build/deb &&
    bash /src/scripts/build-deb.sh --prebuilt /cxiosync-build /cxiosync-build/deb' >"$ROOT.deb.log" 2>&1 || {
    tail -n 40 "$ROOT.deb.log" >&2
    exit 1
  }
  echo "== debian13: $(cd "$ROOT/cxiosync-build/deb" && ls -- *.deb) in $(elapsed "$t0") s"
  exit 0
fi

t0=$(now)
echo "== debian13: unit and dbus tiers"
in_root "$ROOT" ctest --test-dir /cxiosync-build -L 'unit|dbus' -j"$JOBS" --timeout 300 --output-on-failure
echo "== debian13: tests took $(elapsed "$t0") s"
