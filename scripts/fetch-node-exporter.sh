#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fetches Debian's prometheus-node-exporter (bookworm) for the VM tier's scrape scenario
# (tests/vm/scenarios/prom_scrape.sh), without installing it on the host: installing would
# start a node exporter there and add a system user. `apt-get download` through private apt
# state (scripts/private-apt.inc), `dpkg-deb -x` into a cache outside the source tree; the
# guest sees the host's / read-only, so the binary (static Go) runs there as it is.
# Prints the binary's path on stdout. Reused between runs.
#
#   scripts/fetch-node-exporter.sh [--cache DIR]
#
# DIR defaults to $CXIOSYNC_KERNEL_CACHE or /var/cache/cxiosync-ci (if writable), else
# ~/.cache/cxiosync-ci (the kernel cache of scripts/fetch-kernel.sh).
set -euo pipefail

cache=
while [ $# -gt 0 ]; do
	case "$1" in
	--cache) cache=$2; shift 2 ;;
	*) echo "usage: $0 [--cache DIR]" >&2; exit 2 ;;
	esac
done
# shellcheck source=scripts/private-apt.inc
. "$(dirname "$0")/private-apt.inc"
[ -n "$cache" ] || cache=$(default_cache_dir)
dest=$cache/node-exporter
bin=$dest/usr/bin/prometheus-node-exporter
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

private_apt "$cache/apt-bookworm" "deb [signed-by=$private_apt_keyring] $private_apt_mirror bookworm main"
echo "fetch-node-exporter: apt-get update (private lists in $cache/apt-bookworm)" >&2
apt-get "${apt_opts[@]}" -qq update >&2
work=$(mktemp -d "$cache/.fetch-XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get "${apt_opts[@]}" -qq download prometheus-node-exporter >&2)
dpkg-deb -x "$work"/prometheus-node-exporter_*.deb "$work/x"
[ -x "$work/x/usr/bin/prometheus-node-exporter" ] ||
	{ echo "fetch-node-exporter: the package has no usr/bin/prometheus-node-exporter" >&2; exit 1; }
rm -rf "$dest"
mv "$work/x" "$dest"
echo "fetch-node-exporter: $(dpkg-deb -f "$work"/prometheus-node-exporter_*.deb Version) in $dest" >&2
echo "$bin"
