#!/bin/sh
# Every option a program's --help lists is in its man page (doc/man/PROG.1), and every program has one:
# a flag added to --help and not to the page (surge-sim's --recompute) is caught here, not by a user.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
for prog in surge-train surge-plan surge-sim surge-profile surge-report surge-sweep surge-eval surge-sample \
  surge-convert surge-tokenize; do
  page="$top_src/doc/man/$prog.1"
  if [ ! -f "$page" ]; then
    tap_ok 1 "$prog has a man page ($page)"
    continue
  fi
  # the page's text with groff's escapes undone: \- is -, \fB ... \fP are fonts
  sed 's/\\-/-/g; s/\\f[BIRP]//g' "$page" >"$tap_tmp/page.txt"
  "$top_build/$prog" --help >"$tap_tmp/help.txt" 2>&1
  missing=""
  for flag in $(grep -o -e '--[a-z][a-z0-9-]*' "$tap_tmp/help.txt" | sort -u); do
    grep -q -F -e "$flag" "$tap_tmp/page.txt" || missing="$missing $flag"
  done
  [ -z "$missing" ] && [ -s "$tap_tmp/help.txt" ]
  tap_ok $? "$prog: every option of --help is in doc/man/$prog.1${missing:+; missing:$missing}"
done
tap_done
