#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The bash completion of cxiosyncctl (issue 18), driven as bash drives it: COMP_WORDS and
# COMP_CWORD set, _cxiosyncctl called, COMPREPLY compared. Cgroups and loop devices come from
# a fake cgroup2 tree and sysfs; the verbs and options are compared with `cxiosyncctl --help`.
#
#   completion.sh COMPLETION_FILE CXIOSYNCCTL
set -uo pipefail
completion=$1 ctl=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cxiosync-completion.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/cg/system.slice/cron.service" "$tmp/cg/backup.slice" "$tmp/cg/init.scope" \
	"$tmp/cg/user.slice/user-1000.slice/session-2.scope" "$tmp/cg/sys-other"
mkdir -p "$tmp/sys/block/loop0/loop" "$tmp/sys/block/loop1" "$tmp/sys/block/loop12/loop"
echo /srv/disk.img >"$tmp/sys/block/loop0/loop/backing_file"
echo /srv/other.img >"$tmp/sys/block/loop12/loop/backing_file"
# nbd devices: connected ones (a server pid) only.
mkdir -p "$tmp/sys/block/nbd0" "$tmp/sys/block/nbd1"
echo 4242 >"$tmp/sys/block/nbd1/pid"
export _CXIOSYNCCTL_CGROUP_ROOT=$tmp/cg _CXIOSYNCCTL_SYS_ROOT=$tmp/sys

# shellcheck source=/dev/null
. "$completion" || { echo "FAIL: sourcing $completion" && exit 1; }
[ "$(complete -p cxiosyncctl 2>/dev/null)" = "complete -F _cxiosyncctl cxiosyncctl" ] ||
	{ echo "FAIL: cxiosyncctl not registered" && exit 1; }

fail=0
# reply WORD...: COMPREPLY, sorted, one line, for the command line WORD... with the cursor
# on the last word.
reply() {
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMPREPLY=()
	_cxiosyncctl cxiosyncctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort | paste -sd' '
}
# expect WANT WORD...: the completion of WORD... is exactly WANT (sorted, space-separated).
expect() {
	local want=$1 got
	shift
	got=$(reply "$@")
	if [ "$got" = "$want" ]; then
		echo "ok   [$*] -> $got"
	else
		echo "FAIL [$*]: want '$want', got '$got'" && fail=1
	fi
}

expect "isolate" cxiosyncctl is
expect "boost boosts" cxiosyncctl --no-pager bo
expect "check-config" cxiosyncctl -q check
expect "/sys-other /system.slice" cxiosyncctl show /sys
expect "/system.slice/cron.service" cxiosyncctl show /system.slice/
expect "/user.slice/user-1000.slice" cxiosyncctl isolate /user.slice/u
expect "cron.service" cxiosyncctl show cr
expect "session-2.scope" cxiosyncctl reset --runtime se
expect "backup.slice" cxiosyncctl boost b
expect "off on" cxiosyncctl isolate /backup.slice ""
expect "allow deny" cxiosyncctl boost backup.slice ""
expect "inherit max" cxiosyncctl ceiling backup.slice ""
expect "" cxiosyncctl status ""
# --json=pr as bash splits it (COMP_WORDBREAKS has '='), and as one word.
expect "pretty" cxiosyncctl --json = pr
expect "off pretty short" cxiosyncctl list --json =
expect "--json=short" cxiosyncctl --json=sh
expect "session system" cxiosyncctl --bus ""
expect "add detach list set show" cxiosyncctl loop ""
expect "loop0 loop12 nbd1" cxiosyncctl loop show ""
expect "nbd1" cxiosyncctl loop set --workers 2 n
expect "auto kernel nbd" cxiosyncctl loop add --backend ""
expect "caller daemon" cxiosyncctl loop add --server-cgroup ""
expect "--backend=" cxiosyncctl loop add disk.img --back
expect "--queue-depth" cxiosyncctl loop set loop0 --queue
expect "loop12" cxiosyncctl loop detach --force loop1
expect "/dev/loop0 /dev/loop12" cxiosyncctl loop set /dev/l
expect "auto off on" cxiosyncctl loop add --direct-io ""
expect "--direct-io=" cxiosyncctl loop add disk.img --dir
expect "--all" cxiosyncctl loop list --a
expect "" cxiosyncctl show --a

# Every verb of --help completes at the start, and nothing else.
help=$("$ctl" --help) || { echo "FAIL: $ctl --help" && exit 1; }
verbs=$(sed -n '/^Commands:/,/^$/p' <<<"$help" | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p' | LC_ALL=C sort -u | paste -sd' ')
expect "$verbs" cxiosyncctl ""
# Every long option of --help completes (the loop options with the loop verb taking them).
all=$( (
	for v in "" "loop add" "loop list" "loop set" "loop detach"; do
		# shellcheck disable=SC2086
		reply cxiosyncctl $v --
	done
) | tr ' ' '\n' | sed 's/=$//' | sort -u)
for opt in $(grep -oE -- '--[a-z][a-z-]*' <<<"$help" | sort -u); do
	grep -qx -- "$opt" <<<"$all" || { echo "FAIL: option $opt of --help does not complete" && fail=1; }
done
[ $fail -eq 0 ] && echo "ok   every verb and option of cxiosyncctl --help completes"
exit $fail
