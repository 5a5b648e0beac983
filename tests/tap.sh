# TAP helpers for shell tests (sourced). Each check prints one "ok"/"not ok" line.
#   tap_ok COND_EXIT_STATUS "description"     tap_done (prints the plan, exits 1 if any failed)
tap_n=0
tap_failed=0
tap_ok() {
  tap_n=$((tap_n + 1))
  if [ "$1" = 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; tap_failed=$((tap_failed + 1)); fi
}
tap_diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
tap_skip_all() { echo "1..0 # SKIP $1"; exit 0; }
tap_done() {
  echo "1..$tap_n"
  [ "$tap_failed" = 0 ]
  exit $?
}
# Paths: the build tree holds the programs, the source tree the decks and data.
top_src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
top_build=${SURGE_TOP_BUILDDIR:-$top_src}
SURGE_TRAIN="$top_build/surge-train"
# A private scratch directory, removed at exit.
tap_tmp=$(mktemp -d "${TMPDIR:-/tmp}/surge-test.XXXXXX")
trap 'rm -rf "$tap_tmp"' EXIT
