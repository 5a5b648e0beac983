# TAP helpers for shell tests (sourced). Each check prints one "ok"/"not ok" line.
#   tap_ok COND_EXIT_STATUS "description"     tap_done (prints the plan, exits 1 if any failed)
#   tap_skip "why"                             (one check skipped)
#   tap_pass_through LABEL NP PROGRAM ARGS...  (a TAP program under mpiexec; its results become ours;
#                                               at most $tap_timeout seconds, default 60)
#   tap_wait_until SECONDS COMMAND ARGS...     (poll until COMMAND succeeds; 1 on timeout)
#   tap_refused DESCRIPTION PATTERN OUT COMMAND ARGS...  (COMMAND, whose output goes to OUT, exits 2
#                                               with a line matching PATTERN)
#   h5vals FILE DATASET, h5attr FILE OBJECT/ATTRIBUTE  (values read back with h5dump)
#   log_worst_rel LOG_A LOG_B DATASET N, at_most VALUE BOUND  (two runs' logged values compared)
tap_n=0
tap_failed=0
tap_ok() {
  tap_n=$((tap_n + 1))
  if [ "$1" = 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; tap_failed=$((tap_failed + 1)); fi
}
tap_diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
tap_skip_all() { echo "1..0 # SKIP $1"; exit 0; }
tap_skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP $1"; } # one check that cannot run here
tap_refused() {
  tr_what=$1; tr_pattern=$2; tr_out=$3; shift 3
  "$@"
  tr_rc=$?
  grep -q "$tr_pattern" "$tr_out"
  tr_found=$?
  [ $tr_rc = 2 ] && [ $tr_found = 0 ]
  tr_ok=$?
  tap_ok $tr_ok "$tr_what is refused (exit $tr_rc)"
  if [ $tr_ok != 0 ]; then tap_diag "$(tail -n 3 "$tr_out")"; fi
}
tap_done() {
  echo "1..$tap_n"
  [ "$tap_failed" = 0 ]
  exit $?
}
# Paths: the build tree holds the programs, the source tree the decks and data; the MPI launcher.
top_src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
top_build=${SURGE_TOP_BUILDDIR:-$top_src}
SURGE_TRAIN="$top_build/surge-train"
mpiexec=${MPIEXEC:-mpiexec}
# A private scratch directory, removed at exit.
tap_tmp=$(mktemp -d "${TMPDIR:-/tmp}/surge-test.XXXXXX")
trap '[ -n "${SURGE_KEEP_TMP:-}" ] || rm -rf "$tap_tmp"' EXIT
# tap_pass_through LABEL NP PROGRAM ARGS...: run PROGRAM on NP ranks under $mpiexec; its TAP lines
# become ours, labelled "LABEL: ", and one more result checks that it exited 0 with as many results
# as its plan. Its stdout stays in $tap_tmp/pass_through.txt until the next call.
tap_pass_through() {
  pt_label=$1; pt_np=$2; shift 2
  timeout "${tap_timeout:-60}" "$mpiexec" -n "$pt_np" "$@" >"$tap_tmp/pass_through.txt" 2>"$tap_tmp/pass_through.err"
  pt_rc=$?
  pt_results=0
  while IFS= read -r pt_line; do
    case $pt_line in
      "ok "*) tap_ok 0 "$pt_label: ${pt_line#ok * - }"; pt_results=$((pt_results + 1)) ;;
      "not ok "*) tap_ok 1 "$pt_label: ${pt_line#not ok * - }"; pt_results=$((pt_results + 1)) ;;
      "#"*) echo "# $pt_label: ${pt_line#\# }" ;;
    esac
  done <"$tap_tmp/pass_through.txt"
  pt_plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$tap_tmp/pass_through.txt")
  [ "$pt_rc" = 0 ] && [ -n "$pt_plan" ] && [ "$pt_plan" = "$pt_results" ]
  tap_ok $? "$pt_label: exit $pt_rc, plan ${pt_plan:-missing}, $pt_results results"
  [ "$pt_rc" = 0 ] || tap_diag "$(head -c 2000 "$tap_tmp/pass_through.err")"
}
# tap_wait_until SECONDS COMMAND ARGS...: run COMMAND every 0.1 s until it succeeds; status 1 when
# it still fails after SECONDS. Every wait in a test is bounded this way.
tap_wait_until() {
  wu_left=$(($1 * 10)); shift
  until "$@"; do
    [ "$wu_left" -gt 0 ] || return 1
    sleep 0.1
    wu_left=$((wu_left - 1))
  done
}
# h5vals FILE DATASET: its values, one a line (rows of a 2-D dataset one after the other), numbers
# in full precision, strings in their quotes; status 1 when h5dump cannot read it.
h5vals() {
  set -- "$1" "$2" "$(mktemp "$tap_tmp/h5vals.XXXXXX")" # a file of its own: calls may run at once
  h5dump -m '%.17g' -y -d "$2" "$1" >"$3" 2>/dev/null || { rm -f "$3"; return 1; }
  sed -n '/^   DATA {/,/^   }/p' "$3" | sed '1d;$d' | tr ',' '\n' | sed 's/^ *//; s/ *$//; /^$/d'
  rm -f "$3"
}
# h5attr FILE OBJECT/ATTRIBUTE: a scalar attribute's value, numbers in full precision, strings
# without their quotes.
# usr1_caught PID: process PID handles SIGUSR1 already (bit 10 of /proc/PID/status's SigCgt): a signal
# sent now is the program's, not the default's death
usr1_caught() {
  mask=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null) && [ -n "$mask" ] &&
    [ $(( 0x$mask & 0x200 )) != 0 ]
}
h5attr() { h5dump -m '%.17g' -a "$2" "$1" 2>/dev/null | sed -n 's/^ *(0): //p' | sed 's/^"\(.*\)"$/\1/'; }
# log_worst_rel LOG_A LOG_B DATASET N: the largest |a - b| / b over the N values (b > 0) of a
# dataset in two runs' logs, "missing" when they do not hold N such pairs.
log_worst_rel() {
  h5vals "$1" "$3" >"$tap_tmp/worst_rel.a" 2>/dev/null
  h5vals "$2" "$3" >"$tap_tmp/worst_rel.b" 2>/dev/null
  paste "$tap_tmp/worst_rel.a" "$tap_tmp/worst_rel.b" | awk -v want="$4" '
    NF == 2 && $2 > 0 { d = ($1 - $2) / $2; if (d < 0) d = -d; if (d > w) w = d; n++ }
    END { if (n != want) print "missing"; else print w + 0 }'
}
# at_most VALUE BOUND: status 0 when VALUE is a number no larger than BOUND
at_most() { [ "$1" != missing ] && awk -v v="$1" -v b="$2" 'BEGIN { exit !(v <= b) }'; }
# unlabelled FILE: surge-train's output without the "[job] " its lines start with where two jobs
# share it (core/say.h: "[foreground] ", "[background of rank 1] ")
unlabelled() { sed 's/^\[[^]]*\] //' "$1"; }
# shown FILE: the lines of surge-train's output worth showing (its resolved decks and layer tables
# left out)
shown() { unlabelled "$1" | grep -av '^#\|^  \|^[a-z_0-9]* = \|^\[[a-z]*\]$\|^$'; }
