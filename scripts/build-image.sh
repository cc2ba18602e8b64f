#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the OCI image of cxiosyncd and cxiosyncctl (issue 29; docs/kubernetes.md) from this
# tree and Debian packages only: no registry is contacted, no base image pulled.
#
#   bash scripts/build-image.sh [--deb FILE | --prebuilt BUILD_DIR] [--out DIR] [--no-load]
#   bash scripts/build-image.sh --base-only
#
# 1. The package: --deb FILE as given; --prebuilt BUILD_DIR: scripts/build-deb.sh --prebuilt
#    (seconds); neither: scripts/build-deb.sh --head (a full compile of the committed tree).
# 2. The base: the runtime libraries the package's Depends: name (not dbus: the image has no
#    bus of its own) plus busybox (a shell for the liveness probe and `kubectl exec`),
#    extracted by mmdebstrap --variant=extract from the Debian archive of the host's release
#    (the binaries are built against its libraries): no dpkg, apt or shell scripts run, no
#    Essential set. Cached in $CXIOSYNC_IMAGE_CACHE (default /var/cache/cxiosync-ci/
#    image-base-SUITE) until the package list, suite or mirror change (stamp file);
#    --base-only makes only that (the network part; scripts/test.sh prefetches it).
# 3. The root: the base plus the package's files (dpkg-deb -x), without docs, man pages,
#    locales, gconv modules, systemd units, polkit and completion (nothing in a container reads
#    them), a var/lib/dpkg/status naming every package in it (image scanners read it).
# 4. The image: one layer (tar sorted by name, owner 0, mtimes clamped to SOURCE_DATE_EPOCH,
#    default: the HEAD commit's time) packed by umoci into an OCI image layout, and an
#    oci-archive of it: OUT/cxiosync-image-VERSION.oci.tar (default OUT: build-image/ of the
#    checkout, ignored by git). The same package and base give the same image digest.
# 5. Unless --no-load: loaded into podman as localhost/cxiosync:VERSION (skipped when podman
#    already has an image with that ID).
#
# The image: CMD cxiosyncd --bus=none --foreground; no ENTRYPOINT, so `podman run IMAGE
# cxiosyncctl --help` runs what it names. cxiosyncd runs as the container's PID 1 without
# systemd: sd_notify is a no-op without NOTIFY_SOCKET, SIGTERM reaches its signalfd (a blocked
# signal is never dropped for a namespace's init). The DaemonSet's arguments:
# deploy/kubernetes/daemonset.yaml.
#
# Needs root (mmdebstrap, file ownership), mmdebstrap, umoci, dpkg-deb, podman:
# bash scripts/install-deps.sh.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/private-apt.inc
. "$src/scripts/private-apt.inc"

deb='' prebuilt='' out=$src/build-image load=1 base_only=0
while [ $# -gt 0 ]; do
	case $1 in
	--deb) deb=$(realpath "${2:?--deb needs FILE}") && shift 2 ;;
	--prebuilt) prebuilt=$(cd "${2:?--prebuilt needs BUILD_DIR}" && pwd) && shift 2 ;;
	--out) out=${2:?--out needs DIR} && shift 2 ;;
	--no-load) load=0 && shift ;;
	--base-only) base_only=1 && shift ;;
	*) echo "usage: $0 [--deb FILE | --prebuilt BUILD_DIR] [--out DIR] [--no-load] | --base-only" >&2 && exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "build-image: needs root (mmdebstrap, file ownership)" >&2 && exit 1; }
for tool in mmdebstrap umoci dpkg-deb; do
	command -v "$tool" >/dev/null || { echo "build-image: $tool missing; run: bash scripts/install-deps.sh" >&2 && exit 1; }
done

# shellcheck disable=SC1091  # the host's file, read at run time
SUITE=${CXIOSYNC_IMAGE_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}
MIRROR=${private_apt_mirror:?}
CACHE=${CXIOSYNC_IMAGE_CACHE:-$(default_cache_dir)/image-base-$SUITE}
# Bumped when the way the base is made changes (not only the list).
BASE_FORMAT=1
# What the binaries of each release link (the package's shlibs Depends), so --base-only can
# make the base before any package exists; a package that needs more extends the list (and
# the stamp, so the base is remade).
case $SUITE in
bookworm) RUNTIME=(libc6 libgcc-s1 libstdc++6 libsystemd0 libsdbus-c++1 libyaml-cpp0.7 libspdlog1.10-fmt9 libfmt9) ;;
trixie) RUNTIME=(libc6 libgcc-s1 libstdc++6 libsystemd0 libsdbus-c++2 libyaml-cpp0.8 libspdlog1.15 libfmt10) ;;
*) RUNTIME=(libc6 libgcc-s1 libstdc++6 libsystemd0) ;;
esac
RUNTIME+=(busybox)

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# The package, unless only the base is wanted.
if [ $base_only = 0 ] && [ -z "$deb" ]; then
	t0=$(now)
	if [ -n "$prebuilt" ]; then
		bash "$src/scripts/build-deb.sh" --prebuilt "$prebuilt" "$prebuilt/deb" >"$out.deb.log" 2>&1 ||
			{ tail -n 30 "$out.deb.log" >&2 && exit 1; }
	else
		mkdir -p "$out"
		bash "$src/scripts/build-deb.sh" --head "$out/deb" >"$out.deb.log" 2>&1 ||
			{ tail -n 30 "$out.deb.log" >&2 && exit 1; }
	fi
	deb=$(sed -n 's/^build-deb: \(.*\.deb\)$/\1/p' "$out.deb.log" | tail -n1)
	rm -f "$out.deb.log"
	echo "build-image: package $deb in $(elapsed "$t0") s"
fi
if [ -n "$deb" ]; then
	[ -f "$deb" ] || { echo "build-image: $deb: no such package" >&2 && exit 1; }
	# Depends: "a (>= 1), b | c, dbus": the first of each alternative, without versions.
	for p in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g'); do
		[ "$p" = dbus ] && continue
		case " ${RUNTIME[*]} " in *" $p "*) ;; *) RUNTIME+=("$p") ;; esac
	done
fi

STAMP="format=$BASE_FORMAT suite=$SUITE mirror=$MIRROR packages=${RUNTIME[*]}"
mkdir -p "$(dirname "$CACHE")"
exec 9>"$CACHE.lock"
flock 9
if [ -f "$CACHE/.cxiosync-base-stamp" ] && [ "$(cat "$CACHE/.cxiosync-base-stamp")" = "$STAMP" ]; then
	echo "build-image: cached base $CACHE"
else
	t0=$(now)
	rm -rf "$CACHE.new"
	echo "build-image: extracting ${RUNTIME[*]} ($SUITE, $MIRROR) into $CACHE"
	# --skip=cleanup/apt/cache keeps the .debs for the dpkg status below. The archive's
	# Valid-Until is not checked: CI mirrors may be snapshots (the host's apt does the same).
	mmdebstrap --variant=extract --mode=root --skip=cleanup/apt/cache \
		--aptopt='Acquire::Check-Valid-Until "false"' --include="$(
			IFS=,
			echo "${RUNTIME[*]}"
		)" "$SUITE" "$CACHE.new" "$MIRROR" >"$CACHE.log" 2>&1 || { tail -n 30 "$CACHE.log" >&2 && exit 1; }
	mkdir -p "$CACHE.new/.debs"
	mv "$CACHE.new"/var/cache/apt/archives/*.deb "$CACHE.new/.debs/"
	printf '%s\n' "$STAMP" >"$CACHE.new/.cxiosync-base-stamp"
	rm -rf "$CACHE"
	mv "$CACHE.new" "$CACHE"
	echo "build-image: base made in $(elapsed "$t0") s ($(du -sh --exclude=.debs "$CACHE" | cut -f1))"
fi
[ $base_only = 1 ] && exit 0

t0=$(now)
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
work=$(mktemp -d "${TMPDIR:-/tmp}/cxiosync-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
cp -a "$CACHE" "$root"
rm -rf "$root/.debs" "$root/.cxiosync-base-stamp"
dpkg-deb -x "$deb" "$root"

# The status file: each package's control fields, as dpkg would have written them.
mkdir -p "$root/var/lib/dpkg"
for d in "$CACHE"/.debs/*.deb "$deb"; do
	dpkg-deb -f "$d" | sed '1a Status: install ok installed'
	echo
done >"$root/var/lib/dpkg/status"

# What no container reads; what the runtime provides (/dev, /etc/hostname, /etc/resolv.conf).
rm -rf "$root"/usr/share/{doc,man,info,locale,lintian,gdb,gcc,bug,bash-completion,polkit-1,initramfs-tools} \
	"$root"/usr/share/dbus-1/system-services "$root"/usr/lib/x86_64-linux-gnu/gconv \
	"$root"/lib/systemd "$root"/usr/lib/systemd "$root"/usr/lib/tmpfiles.d \
	"$root"/etc/apt "$root"/var/cache "$root"/var/log "$root"/var/lib/apt \
	"$root"/etc/hostname "$root"/etc/resolv.conf "${root:?}"/dev
mkdir -p "$root"/{dev,proc,sys,run/cxiosync,var/lib/cxiosync,host/sys/fs/cgroup,host/sys/kernel/tracing,tmp}
chmod 1777 "$root/tmp"
# busybox's applets as links (sh, stat, date, cat, ls ...): chroot runs the image's own.
# /bin/sh is the liveness probe's shell (deploy/kubernetes/daemonset.yaml).
ln -s busybox "$root/bin/sh"
mkdir -p "$root/usr/local/bin"
for a in $(chroot "$root" /bin/busybox --list); do
	[ -e "$root/bin/$a" ] || [ -e "$root/usr/bin/$a" ] || [ -e "$root/usr/sbin/$a" ] || [ -e "$root/sbin/$a" ] ||
		ln -s /bin/busybox "$root/usr/local/bin/$a"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
# The binaries must run on the image's own libraries, not the build host's.
chroot "$root" /usr/sbin/cxiosyncd --version >/dev/null
chroot "$root" /usr/bin/cxiosyncctl --help >/dev/null

epoch=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}
tar --sort=name --mtime="@$epoch" --clamp-mtime --owner=0 --group=0 --numeric-owner \
	--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
	-C "$root" -cf "$work/layer.tar" .

layout=$work/oci
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
umoci init --layout "$layout"
umoci new --image "$layout:$version"
umoci raw add-layer --image "$layout:$version" --history.created="$created" \
	--history.created_by="scripts/build-image.sh: cxiosync $version + ${RUNTIME[*]} ($SUITE)" "$work/layer.tar"
umoci config --image "$layout:$version" --created="$created" --os=linux --architecture="$arch" \
	--author="cxiosync maintainers <cxiosync@cxiosync.org>" \
	--config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	--config.cmd=cxiosyncd --config.cmd=--bus=none --config.cmd=--foreground \
	--config.workingdir=/ --config.stopsignal=SIGTERM \
	--config.label=org.opencontainers.image.title=cxiosync \
	--config.label=org.opencontainers.image.version="$version" \
	--config.label=org.opencontainers.image.licenses=GPL-2.0-or-later \
	--config.label=org.opencontainers.image.base.name="debian:$SUITE (extracted: ${RUNTIME[*]})" \
	--no-history
umoci gc --layout "$layout"
mkdir -p "$out"
archive=$out/cxiosync-image-$version.oci.tar
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -C "$layout" -cf "$archive.new" .
mv "$archive.new" "$archive"

# The image ID podman gives it: the config blob's digest.
manifest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"].split(":")[1])' "$layout/index.json")
config=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["digest"].split(":")[1])' "$layout/blobs/sha256/$manifest")
layer_bytes=$(python3 -c 'import json,sys; print(sum(l["size"] for l in json.load(open(sys.argv[1]))["layers"]))' "$layout/blobs/sha256/$manifest")
echo "build-image: $archive (image ${config:0:12}, root $(du -s --apparent-size -B1 "$root" | cut -f1) bytes," \
	"compressed layer $layer_bytes bytes) in $(elapsed "$t0") s"

if [ $load = 1 ]; then
	command -v podman >/dev/null || { echo "build-image: podman missing (--no-load, or bash scripts/install-deps.sh)" >&2 && exit 1; }
	name=localhost/cxiosync:$version
	if [ "$(podman image inspect --format '{{.Id}}' "$name" 2>/dev/null)" = "$config" ]; then
		echo "build-image: podman has $name (${config:0:12}) already"
	else
		previous=$(podman image inspect --format '{{.Id}}' "$name" 2>/dev/null || true)
		podman pull -q "oci-archive:$archive" >/dev/null
		podman tag "$config" "$name"
		# The archive's ref name alone ("VERSION") becomes localhost/VERSION:latest.
		podman untag "$config" "localhost/$version:latest" 2>/dev/null || true
		# The image this one replaces, if nothing else names it now.
		if [ -n "$previous" ] && [ "$(podman image inspect --format '{{len .RepoTags}}' "$previous" 2>/dev/null)" = 0 ]; then
			podman rmi -f "$previous" >/dev/null 2>&1 || true
		fi
		echo "build-image: loaded into podman as $name"
	fi
fi
