#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The rendered man pages (issue 18): each renders without a groff/man warning at 80 columns,
# and every verb and option that `cxiosyncctl --help` / `cxiosyncd --help` prints appears in
# its page, so a new option without documentation fails here.
#
#   man_pages.sh MANDIR CXIOSYNCD CXIOSYNCCTL
set -euo pipefail
mandir=$1 daemon=$2 ctl=$3
fail=0

for page in cxiosyncd.8 cxiosyncctl.1 cxiosync.yaml.5 org.cxiosync1.5; do
	[ -s "$mandir/$page" ] || { echo "FAIL $page: missing or empty in $mandir" && fail=1 && continue; }
	warnings=$(MANWIDTH=80 man -l --warnings "$mandir/$page" 2>&1 >/dev/null)
	if [ -n "$warnings" ]; then
		echo "FAIL $page: man -l --warnings printed:" && echo "$warnings" && fail=1
	fi
done

# render PAGE: plain text without line wrapping (a very wide page), so an option is never
# hyphenated across lines; nroff's hyphen U+2010 and minus U+2212 read as ASCII '-'.
render() {
	MANWIDTH=2000 LC_ALL=C.UTF-8 man -l "$mandir/$1" 2>/dev/null | col -bx | sed 's/‐/-/g; s/−/-/g'
}

# words HELP: every long option (--name, without =VALUE) and short option of a help text.
options() { grep -oE -- '(^|[][ ,|])--?[a-z][a-z-]*' | sed 's/^[][ ,|]//' | sort -u; }

# check PAGE WHAT WORD...: each WORD appears in PAGE's text as a whole word; a verb as the
# term of its own entry (the start of a line), not just mentioned somewhere.
check() {
	local page=$1 what=$2 text word missing=0 pre='(^|[^a-z-])'
	[ "$what" = verb ] && pre='^ *'
	shift 2
	text=$(render "$page")
	[ -n "$text" ] || { echo "FAIL $page: renders empty" && fail=1 && return; }
	for word in "$@"; do
		if ! grep -qE -- "$pre$(printf '%s' "$word" | sed 's/[.]/\\./g')([^a-z-]|$)" <<<"$text"; then
			echo "FAIL $page: $what '$word' of --help is not in the page" && missing=1
		fi
	done
	[ $missing -eq 0 ] && echo "ok   $page: $# ${what}s of --help documented"
	[ $missing -eq 0 ] || fail=1
}

ctl_help=$("$ctl" --help)
daemon_help=$("$daemon" --help)

# cxiosyncctl's verbs: the first word of each line in the Commands: block, and the second
# one for the two-word `loop` verbs.
mapfile -t verbs < <(sed -n '/^Commands:/,/^$/p' <<<"$ctl_help" | sed -n 's/^  \([a-z][a-z-]*\)\( \([a-z][a-z-]*\)\)\{0,1\}\b.*/\1 \3/p' |
	awk '$1 == "loop" { print $1 " " $2; next } { print $1 }' | sort -u)
[ ${#verbs[@]} -ge 10 ] || { echo "FAIL: only ${#verbs[@]} verbs parsed from cxiosyncctl --help" && exit 1; }
mapfile -t ctl_opts < <(options <<<"$ctl_help")
mapfile -t daemon_opts < <(options <<<"$daemon_help")
[ ${#ctl_opts[@]} -ge 10 ] && [ ${#daemon_opts[@]} -ge 10 ] ||
	{ echo "FAIL: too few options parsed (${#ctl_opts[@]}, ${#daemon_opts[@]})" && exit 1; }

check cxiosyncctl.1 verb "${verbs[@]}"
check cxiosyncctl.1 option "${ctl_opts[@]}"
check cxiosyncd.8 option "${daemon_opts[@]}"
exit $fail
