# Helpers the benchmark scripts share (sourced after they set $tmp, a scratch directory).
command -v h5dump >/dev/null 2>&1 || { echo "$(basename "$0"): h5dump is needed to read the run logs" >&2; exit 1; }
h5vals() { # h5vals FILE DATASET: the values, one per line, floats in full (h5dump prints 6 digits)
  h5dump -d "$2" -m '%.17g' -y -w 0 -o "$tmp/vals.txt" "$1" >/dev/null 2>&1 || return 1
  tr ', \t' '\n\n\n' <"$tmp/vals.txt" | awk NF
}
h5attr() { # h5attr FILE OBJECT/ATTRIBUTE: a scalar attribute's value
  h5dump -a "$2" "$1" | sed -n 's/^ *(0): //p'
}
median() { # the median of the numbers on standard input ("nan" when there are none)
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
    else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# The kernel's autogroups (kernel.sched_autogroup_enabled) for an emulated-cluster benchmark: with
# them on (Debian's default) the emulated nodes' ranks are in two sessions sharing the cores, and a
# foreground beside low-priority backgrounds stalls for seconds (doc/cluster.md). autogroup_apply
# sets them as CLUSTER_AUTOGROUP asks (0 or 1; unset: as they are), autogroup_restore (from the
# EXIT trap) puts back what it found, autogroup_now prints the setting ("-": no autogroups).
ag_file=/proc/sys/kernel/sched_autogroup_enabled
ag_was=$(cat "$ag_file" 2>/dev/null || echo none)
autogroup_now() { cat "$ag_file" 2>/dev/null || echo "-"; }
ag_set=0
autogroup_restore() { [ $ag_set = 0 ] || [ "$ag_was" = none ] || { echo "$ag_was" >"$ag_file"; } 2>/dev/null || true; }
autogroup_apply() {
  case ${CLUSTER_AUTOGROUP:-} in
    "") ;;
    0 | 1) { echo "$CLUSTER_AUTOGROUP" >"$ag_file"; } 2>/dev/null ||
      { echo "$(basename "$0"): cannot set $ag_file to $CLUSTER_AUTOGROUP" >&2; exit 1; }
      ag_set=1 ;;
    *) echo "$(basename "$0"): CLUSTER_AUTOGROUP=$CLUSTER_AUTOGROUP: expected 0 or 1" >&2; exit 2 ;;
  esac
}
# cluster_up WHAT NODES SLOTS RATE: bring up the emulated cluster (doc/cluster.md) in $tmp/cluster for
# the rest of the script, taken down at its exit, and source its environment; where this machine
# cannot run it, print "-- WHAT: skipped: why" and exit 0 (needs $src).
cluster_up() {
  cu_up="$src/tools/cluster-local-up.sh"
  if ! cu_why=$("$cu_up" --check 2>&1); then
    echo "-- $1: skipped: ${cu_why#cluster-local-up: }"
    exit 0
  fi
  export CLUSTER_LOCAL_DIR="$tmp/cluster"
  trap '"$src/tools/cluster-local-down.sh" >/dev/null 2>&1; rm -rf "$tmp"; autogroup_restore' EXIT
  autogroup_apply
  "$cu_up" --nodes "$2" --slots "$3" --link "$4" >"$tmp/up.txt" 2>&1 || { cat "$tmp/up.txt" >&2; exit 1; }
  . "$CLUSTER_LOCAL_DIR/cluster.env"
}
# mux_table DP ALONE [LABEL FG BG]...: the multiplexing benchmarks' table: the data-parallel plan
# alone (DP samples/s), the burst plan alone (ALONE), then a row per burst plan with backgrounds
# (LABEL, its foreground's and its backgrounds' samples/s): total, fg slowdown = ALONE / FG,
# total / DP.
mux_table() {
  mt_dp=$1 mt_alone=$2
  shift 2
  printf '%-44s %12s %12s %12s %10s %10s\n' configuration "fg samp/s" "bg samp/s" total "fg slowdn" total/dp
  awk -v dp="$mt_dp" -v a="$mt_alone" 'BEGIN {
    printf "%-44s %12.1f %12s %12.1f %10s %10.3f\n", "data-parallel plan alone", dp, "-", dp, "-", 1
    printf "%-44s %12.1f %12s %12.1f %10s %10.3f\n", "burst plan alone", a, "-", a, "-", a / dp }'
  while [ $# -ge 3 ]; do
    awk -v dp="$mt_dp" -v a="$mt_alone" -v l="$1" -v f="$2" -v b="$3" 'BEGIN {
      printf "%-44s %12.1f %12.1f %12.1f %10.3f %10.3f\n", l, f, b, f + b, a / f, (f + b) / dp }'
    shift 3
  done
}
