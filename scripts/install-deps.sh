#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs everything the build, the tests and the demo need on Debian bookworm.
# Idempotent: packages already present are skipped without touching the network.
set -euo pipefail

PACKAGES=(
  # toolchain and build
  build-essential cmake ninja-build pkg-config git clang clang-format libclang-rt-14-dev
  # libraries (sdbus-c++ pinned to the 1.2 API that bookworm ships)
  libsdbus-c++-dev libsdbus-c++-bin libsystemd-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev nlohmann-json3-dev
  # runtime pieces for the dbus tier
  dbus
  # the real-kernel VM tier and the demo
  qemu-system-x86 qemu-utils linux-image-amd64 busybox-static kmod cpio e2fsprogs
  util-linux fio python3 jq procps
  # containers in the VM tier (systemd_podman: --device-write-bps); no registry is used
  podman
  # the Debian package (scripts/build-deb.sh)
  debhelper dpkg-dev fakeroot
  # man pages (scdoc renders them; man-db and groff check them) and the package check
  scdoc man-db groff-base bsdextrautils lintian
  # the Debian 13 job (scripts/debian13-root.sh): a trixie root made from Debian's archive
  debootstrap
  # the OCI image (scripts/build-image.sh: a root of Debian packages, packed without a
  # registry) and the offline check of deploy/kubernetes/ against the API's typed models
  mmdebstrap umoci python3-kubernetes
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}) and not root; run as root" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Another apt run (unattended upgrades, a parallel job) holds the lock for a while: wait for it.
apt_wait=(-o DPkg::Lock::Timeout=600)
apt-get "${apt_wait[@]}" update -qq
apt-get "${apt_wait[@]}" install -y -qq --no-install-recommends "${missing[@]}"
