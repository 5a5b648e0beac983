#!/bin/sh
# surge-report on the logs of a multiplexed run (one MPMD mpiexec: a 2-rank vgg-mini burst foreground
# whose plan leaves rank 1 idle for the second half of the net, and a 1-rank mlp background beside
# each foreground rank) and of the same foreground alone. Synthetic data: no data set needed.
#  - the summary's multiplexing section against /multiplex read by h5dump: role, channel, priority,
#    the run's samples/s, the medians of the per-step series, the slowdown (or why it is missing),
#    the foreground's steps with a running partner, the background's paused share per rank;
#  - the phase table: the background / paused column as logged, left out of the total; the
#    category shares; a run without multiplexing shows neither;
#  - the --plot timeline: the background / paused bars with their logged times and a legend entry;
#  - the table of many runs: role and foreground / background / total samples/s columns, the
#    foreground-only run's samples/s beside the foreground's; CSV and JSON of the table and of one run.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

report="$top_build/surge-report"
command -v h5dump >/dev/null 2>&1 || tap_skip_all "h5dump not installed (Debian: hdf5-tools)"
python=$(command -v python3 || true)
export OMPI_MCA_rmaps_base_oversubscribe=1

"$top_build/tests/make_plan" "$top_src/inputs/vgg-mini-fmnist.deck" 2 "$tap_tmp/p.plan" train.global_batch=32 \
  model.vgg_channels=4,8 model.vgg_fc=32 >"$tap_tmp/plan.txt" 2>&1
tap_ok $? "make_plan wrote a 2-rank plan for vgg-mini"
awk '/^[0-9]+ / && $1 >= 6 { print $1, $2, 1, 0, 32; next } { print }' "$tap_tmp/p.plan" >"$tap_tmp/idle.plan"
data="-D data.source=synthetic -D data.synthetic_samples=512 -D run.print_every=1000"
FG="$SURGE_TRAIN $top_src/inputs/vgg-mini-fmnist.deck $data -D model.vgg_channels=4,8 -D model.vgg_fc=32
  -D train.global_batch=32 -D data.test_samples=64 -D run.steps=60 -D parallel.mode=burst
  -D parallel.plan=$tap_tmp/idle.plan"
BG="$SURGE_TRAIN $top_src/inputs/mlp-fmnist.deck --background $data -D model.mlp_hidden=64 -D run.eval_every=0
  -D run.steps=100000 -D multiplex.priority=nice"

# h5vals FILE DATASET: its values, one a line, in full precision (row-major for 2-D datasets)
# rank_column NRANKS R: column R of the values of a 2-D dataset (h5vals output on standard input)
rank_column() { awk -v n="$1" -v r="$2" '(NR - 1) % n == r'; }
# median: the median of the numbers on standard input, as %.1f
median() {
  sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f", m }'
}
# grid_value FILE SECTION_LINE ROW COLUMN: the cell of a summary grid: the first grid after the line
# matching SECTION_LINE, the row whose first cell is ROW, the column headed COLUMN ("" when none)
grid_value() {
  awk -v start="$2" -v row="$3" -v name="$4" '
    !on && index($0, start) { on = 1; next }
    on && !col && $1 == "rank" { for (i = 1; i <= NF; i++) if ($i == name) col = i; if (!col) exit; next }
    on && col && $1 == row { print $col; exit }' "$1"
}
# py TEXT SCRIPT ARGS...: a check in Python (json, csv, xml.dom.minidom); skipped without python3
py() {
  text=$1; shift
  if [ -z "$python" ]; then echo "ok $((tap_n += 1)) - $text # SKIP python3 not installed"; return; fi
  out=$("$python" -c "$@" 2>&1)
  tap_ok $? "$text${out:+: $out}"
}

# ---- the runs
# shellcheck disable=SC2086
timeout 120 "$mpiexec" -n 2 $FG -D "run.out_dir=$tap_tmp/fg" \
  : -n 1 $BG -D "run.out_dir=$tap_tmp/b0" \
  : -n 1 $BG -D "run.out_dir=$tap_tmp/b1" -D multiplex.partner_offset=1 >"$tap_tmp/mux.txt" 2>&1
rc=$?
tap_ok $rc "MPMD run: a 2-rank foreground and two 1-rank backgrounds (exit $rc)"
[ $rc = 0 ] || tap_diag "$(tail -n 20 "$tap_tmp/mux.txt")"
# shellcheck disable=SC2086
timeout 120 "$mpiexec" -n 2 $FG -D "run.out_dir=$tap_tmp/solo" >"$tap_tmp/solo.txt" 2>&1
tap_ok $? "the same foreground alone"
fg="$tap_tmp/fg/log.h5" b0="$tap_tmp/b0/log.h5" b1="$tap_tmp/b1/log.h5" solo="$tap_tmp/solo/log.h5"
nb1=$(h5vals "$b1" /metrics/step | wc -l)
[ "$nb1" -ge 1 ]
tap_ok $? "the background beside the idle foreground rank logged $nb1 steps"

# ---- one foreground run: the multiplexing section
"$report" "$fg" >"$tap_tmp/fg.txt" 2>&1
tap_ok $? "summary of the foreground: exit 0"
grep -q '^Multiplexing (foreground/background)$' "$tap_tmp/fg.txt"
tap_ok $? "it has the multiplexing section"
want="  role        foreground on channel $(h5attr "$fg" /multiplex/channel), CPU priority $(h5attr "$fg" /multiplex/priority), on_foreground_end $(h5attr "$fg" /multiplex/on_foreground_end)"
grep -qxF "$want" "$tap_tmp/fg.txt"
tap_ok $? "role, channel, priority and on_foreground_end from /multiplex:$want"
# rates LOG: "foreground F, background B, total T" of the /multiplex attributes, as %.1f
rates() {
  printf 'foreground %.1f, background %.1f, total %.1f' "$(h5attr "$1" /multiplex/foreground_samples_per_sec)" \
    "$(h5attr "$1" /multiplex/background_samples_per_sec)" "$(h5attr "$1" /multiplex/total_samples_per_sec)"
}
# per_step LOG: the same of the medians of the /multiplex series
per_step() {
  printf 'foreground %s, background %s, total %s' "$(h5vals "$1" /multiplex/foreground_samples_per_sec | median)" \
    "$(h5vals "$1" /multiplex/background_samples_per_sec | median)" \
    "$(h5vals "$1" /multiplex/total_samples_per_sec | median)"
}
want="  samples/s   $(rates "$fg") (the run's totals)"
grep -qxF "$want" "$tap_tmp/fg.txt"
tap_ok $? "the run's samples/s are the /multiplex attributes:$want"
n=$(h5vals "$fg" /multiplex/step | wc -l)
want="  per step    $(per_step "$fg") (medians over $n steps)"
grep -qxF "$want" "$tap_tmp/fg.txt"
tap_ok $? "per step: the medians of the /multiplex series:$want"
slowdown=$(h5attr "$fg" /multiplex/foreground_slowdown)
case $slowdown in
  nan | -nan) want="  slowdown    not measured in this run: compare samples/s with a foreground-only log (surge-report FG.h5 SOLO.h5), or rerun with [multiplex] baseline = SOLO.h5" ;;
  *) want="  slowdown    $(printf %.3f "$slowdown") (mean foreground step with a background partner / without)" ;;
esac
grep -qxF "$want" "$tap_tmp/fg.txt"
tap_ok $? "the slowdown as /multiplex@foreground_slowdown ($slowdown) says:$want"
want=$(h5vals "$fg" /multiplex/background_ranks_active |
  awk '{ n++; ran += $1 > 0; s += $1 } END { printf "  partner     ran in %d of %d steps (%.1f%%), on %.2f foreground ranks per step on average", ran, n, 100 * ran / n, s / n }')
grep -qxF "$want" "$tap_tmp/fg.txt"
tap_ok $? "the steps whose partner ran: background_ranks_active > 0:$want"

# ---- the foreground's phases: the background column, not in the total
# phase_means PHASE: each rank's PHASE ms per step in the report is the mean of its /ranks/phase_PHASE
phase_means() {
  pm_ok=0
  for r in 0 1; do
    want=$(h5vals "$fg" "/ranks/phase_$1" | rank_column 2 $r | awk '{ s += $1 } END { printf "%.3f", 1e3 * (s / NR) }')
    got=$(grid_value "$tap_tmp/fg.txt" "milliseconds per step" $r "$1")
    [ -n "$got" ] && [ "$got" = "$want" ] || pm_ok=1
    tap_diag "rank $r: $1 $got ms per step, h5dump $want"
  done
  return $pm_ok
}
phase_means background
tap_ok $? "each rank's background time per step is the mean of its /ranks/phase_background column"
total=$(grid_value "$tap_tmp/fg.txt" "milliseconds per step" 1 total)
sum=0
for p in data forward backward wait comm optimizer; do
  sum=$(awk -v a="$sum" -v b="$(grid_value "$tap_tmp/fg.txt" "milliseconds per step" 1 $p)" 'BEGIN { print a + b }')
done
awk -v t="$total" -v s="$sum" 'BEGIN { d = t - s; exit !(d < 0.0035 && d > -0.0035) }'
tap_ok $? "rank 1's total $total ms is its six phases' ($sum), without the background time"
[ -z "$(grid_value "$tap_tmp/fg.txt" "milliseconds per step" 0 paused)" ] &&
  [ -z "$(h5vals "$fg" /ranks/phase_paused | awk '$1 != 0')" ]
tap_ok $? "the foreground's paused column (all zeros in its log) is left out"
grep -q '^ *rank *compute *data *communication *waiting *background *offered$' "$tap_tmp/fg.txt"
tap_ok $? "the category shares have a background and an offered column"
phase_means offered
tap_ok $? "each rank's offered time per step (published idle or waiting) is the mean of its /ranks/phase_offered column"
# ms_per_step LOG PHASE: rank 1's mean time per step in /ranks/phase_PHASE, ms, in full precision
ms_per_step() { h5vals "$1" "/ranks/phase_$2" | rank_column 2 1 | awk '{ s += $1 } END { printf "%.17g", 1e3 * (s / NR) }'; }
want=$(for p in data forward backward wait comm optimizer; do ms_per_step "$fg" $p; echo; done |
  awk -v b="$(ms_per_step "$fg" background)" '{ t += $1 } END { printf "%.1f%%", 100 * b / t }')
got=$(grid_value "$tap_tmp/fg.txt" "share of each rank" 1 background)
[ "$got" = "$want" ]
tap_ok $? "rank 1's background share $got = its /ranks/phase_background time over its six phases' ($want)"

# ---- one background run: its paused time
"$report" "$b1" >"$tap_tmp/b1.txt" 2>&1
tap_ok $? "summary of a background: exit 0"
want="  role        background on channel $(h5attr "$fg" /multiplex/channel), CPU priority $(h5attr "$b1" /multiplex/priority), on_foreground_end stop"
grep -qxF "$want" "$tap_tmp/b1.txt" && [ "$(h5attr "$b1" /multiplex/priority)" != none ]
tap_ok $? "the background's role, on its foreground's channel, at a lower priority:$want"
want="  samples/s   $(rates "$b1") (the run's totals)"
grep -qxF "$want" "$tap_tmp/b1.txt"
tap_ok $? "its samples/s:$want"
want=$(h5vals "$b1" /ranks/phase_paused | awk '{ s += $1 } END { printf "%.4f", s }')
steps=$(h5vals "$b1" /metrics/step_time | awk '{ s += $1 } END { printf "%.4f", s }')
h5vals "$b1" /metrics/step_time >"$tap_tmp/st.txt"
share=$(h5vals "$b1" /ranks/phase_paused | paste - "$tap_tmp/st.txt" | awk '{ p += $1; t += $2 } END { printf "%.1f%%", 100 * p / t }')
line=$(awk '$1 == "rank" && $2 == "paused" { getline; print $1, $2, $3, $4; exit }' "$tap_tmp/b1.txt")
[ "$line" = "0 $want $steps $share" ]
tap_ok $? "paused $share of the time: sum of /ranks/phase_paused ($want s) over the summed step time ($steps s): $line"
bslow=$(h5attr "$b1" /multiplex/foreground_slowdown)
case $bslow in
  nan | -nan | "") ! grep -q '^  slowdown' "$tap_tmp/b1.txt" ;;
  *) grep -qxF "  slowdown    $(printf %.3f "$bslow") (its foreground's, as the foreground measured it)" "$tap_tmp/b1.txt" ;;
esac
tap_ok $? "the background's slowdown line follows its /multiplex@foreground_slowdown (${bslow:-absent})"
grep -q '^ *rank *compute *data *communication *waiting *paused$' "$tap_tmp/b1.txt" &&
  [ -z "$(grid_value "$tap_tmp/b1.txt" "milliseconds per step" 0 background)" ] &&
  [ -n "$(grid_value "$tap_tmp/b1.txt" "milliseconds per step" 0 paused)" ]
tap_ok $? "the background's phase table has the paused column and its own category, no background column"
"$report" "$b0" >"$tap_tmp/b0.txt" 2>&1 && grep -q '^Multiplexing' "$tap_tmp/b0.txt"
tap_ok $? "the other background's log (its partner rarely idle: $(h5vals "$b0" /metrics/step | wc -l) steps) is summarised"

# ---- the foreground alone: as before multiplexing
"$report" "$solo" >"$tap_tmp/solo-sum.txt" 2>&1
tap_ok $? "summary of the foreground-only run: exit 0"
! sed -n '/^Throughput/,$p' "$tap_tmp/solo-sum.txt" | grep -q -e '^Multiplexing' -e 'background' -e 'paused' &&
  grep -q '^ *rank *data *forward *backward *wait *comm *optimizer *total$' "$tap_tmp/solo-sum.txt" &&
  grep -q '^ *rank *compute *data *communication *waiting$' "$tap_tmp/solo-sum.txt"
tap_ok $? "it has no multiplexing section, background or paused column"

# ---- the timeline of one step: the first step with a background (paused) time
# first_positive LOG DATASET NRANKS: the first step in which a rank's value of DATASET is positive
first_positive() { h5vals "$1" "$2" | awk -v n="$3" '$1 > 0 { print int((NR - 1) / n) + 1; exit }'; }
sf=$(first_positive "$fg" /ranks/phase_background 2)
sb=$(first_positive "$b1" /ranks/phase_paused 1)
[ -n "$sf" ] && [ -n "$sb" ] &&
  "$report" "$fg" --plot "$tap_tmp/fig-fg" --step "$sf" >/dev/null &&
  "$report" "$b1" --plot "$tap_tmp/fig-b1" --step "$sb" >/dev/null &&
  "$report" "$solo" --plot "$tap_tmp/fig-solo" --step 10 >/dev/null
tap_ok $? "--plot of the foreground (step ${sf:-none} lent time), the background (step ${sb:-none} paused) and the run alone"
py "the foreground's timeline: a background bar per rank with its logged time at step $sf, in the legend" "
import sys, xml.dom.minidom as m
doc = m.parse(sys.argv[1])
groups = doc.getElementsByTagName('g')
bg = [g for g in groups if g.getAttribute('id') == 'phase-background']
assert len(bg) == 1 and bg[0].getAttribute('class') == 'phase overlap', [g.getAttribute('class') for g in bg]
tips = [r.getElementsByTagName('title')[0].firstChild.data for r in bg[0].getElementsByTagName('rect')]
want = ['rank %d, background: %.3f ms (partner ran during the step)' % (r, 1e3 * float(v))
        for r, v in enumerate(sys.argv[2].split()) if float(v) > 0]
assert tips == want and want, (tips, want)
assert not [g for g in groups if g.getAttribute('id') == 'phase-paused']
assert len([g for g in groups if g.getAttribute('class') == 'phase']) == 6
legend = [t.firstChild.data for t in doc.getElementsByTagName('text')]
assert 'background (partner ran)' in legend, legend
" "$tap_tmp/fig-fg/timeline.svg" "$(h5vals "$fg" /ranks/phase_background | sed -n "$((2 * ${sf:-1} - 1)),$((2 * ${sf:-1}))p" | tr '\n' ' ')"
py "the background's timeline: a paused bar, in the legend" "
import sys, xml.dom.minidom as m
doc = m.parse(sys.argv[1])
groups = doc.getElementsByTagName('g')
paused = [g for g in groups if g.getAttribute('id') == 'phase-paused']
assert len(paused) == 1 and paused[0].getAttribute('class') == 'phase overlap'
tips = [r.getElementsByTagName('title')[0].firstChild.data for r in paused[0].getElementsByTagName('rect')]
want = ['rank 0, paused: %.3f ms (at the gate during the step)' % (1e3 * float(sys.argv[2]))]
assert tips == want, (tips, want)
assert not [g for g in groups if g.getAttribute('id') == 'phase-background']
legend = [t.firstChild.data for t in doc.getElementsByTagName('text')]
assert 'paused (at the gate)' in legend, legend
" "$tap_tmp/fig-b1/timeline.svg" "$(h5vals "$b1" /ranks/phase_paused | sed -n "${sb:-1}p")"
py "the foreground-only timeline has neither" "
import sys, xml.dom.minidom as m
doc = m.parse(sys.argv[1])
groups = doc.getElementsByTagName('g')
assert not [g for g in groups if 'overlap' in g.getAttribute('class')]
assert len([g for g in groups if g.getAttribute('class') == 'phase']) == 6
assert not [t for t in doc.getElementsByTagName('text') if 'background' in t.firstChild.data]
" "$tap_tmp/fig-solo/timeline.svg"

# ---- many runs: the table
# column NAME FILE: the values of table column NAME, space-separated
column() {
  awk -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) col = i; next } { printf "%s ", $col }' "$2"
}
"$report" "$fg" "$solo" "$b1" >"$tap_tmp/table.txt"
tap_ok $? "table of the foreground, the foreground alone and a background: exit 0"
head -n 1 "$tap_tmp/table.txt" |
  grep -q ' samples_per_sec  *role  *foreground_samples_per_sec  *background_samples_per_sec  *total_samples_per_sec$'
tap_ok $? "columns role and foreground / background / total samples/s: $(head -n 1 "$tap_tmp/table.txt")"
want="foreground none background "
[ "$(column role "$tap_tmp/table.txt")" = "$want" ]
tap_ok $? "roles: $(column role "$tap_tmp/table.txt")"
# cell LOG ATTRIBUTE: a /multiplex attribute as the table shows it, %.1f or "-" when never measured
# (a background that finished no step while its foreground ran has no foreground rate: NaN)
cell() {
  case $(h5attr "$1" "/multiplex/$2") in
    nan | -nan) printf -- - ;;
    *) printf '%.1f' "$(h5attr "$1" "/multiplex/$2")" ;;
  esac
}
want="$(cell "$fg" foreground_samples_per_sec) - $(cell "$b1" foreground_samples_per_sec) "
[ "$(column foreground_samples_per_sec "$tap_tmp/table.txt")" = "$want" ]
tap_ok $? "foreground samples/s from /multiplex, none for the run alone: $want"
want="$(cell "$fg" total_samples_per_sec) - $(cell "$b1" total_samples_per_sec) "
[ "$(column total_samples_per_sec "$tap_tmp/table.txt")" = "$want" ]
tap_ok $? "total samples/s: $want"
# sps LOG: samples/s of the summary, sum(samples_per_sec * step_time) / sum(step_time)
sps() {
  h5vals "$1" /metrics/step_time >"$tap_tmp/t.txt"
  h5vals "$1" /metrics/samples_per_sec | paste - "$tap_tmp/t.txt" | awk '{ s += $1 * $2; t += $2 } END { printf "%.1f", s / t }'
}
want="$(sps "$fg") $(sps "$solo") $(sps "$b1") "
[ "$(column samples_per_sec "$tap_tmp/table.txt")" = "$want" ]
tap_ok $? "the foreground's samples/s beside the foreground-only run's: $want"
"$report" --table "$solo" >"$tap_tmp/solo-table.txt"
! grep -q -e role -e foreground_samples_per_sec "$tap_tmp/solo-table.txt"
tap_ok $? "a table without multiplexed logs has no such columns"
"$report" "$fg" "$solo" --csv "$tap_tmp/table.csv" --json "$tap_tmp/table.json" >/dev/null
tap_ok $? "--csv and --json of the table: exit 0"
py "table CSV and JSON: role and samples/s of /multiplex, empty / null for the run alone" "
import csv, json, sys
fg, bg, total = (float(x) for x in sys.argv[3:6])
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r['role'] for r in rows] == ['foreground', 'none'], rows
assert abs(float(rows[0]['foreground_samples_per_sec']) - fg) < 1e-9 * fg, rows[0]
assert rows[1]['foreground_samples_per_sec'] == rows[1]['background_samples_per_sec'] == '', rows[1]
d = json.load(open(sys.argv[2]))
assert d[0]['role'] == 'foreground' and d[1]['role'] == 'none'
assert abs(d[0]['background_samples_per_sec'] - bg) < 1e-9 * bg and abs(d[0]['total_samples_per_sec'] - total) < 1e-9 * total
assert d[1]['total_samples_per_sec'] is None and d[1]['samples_per_sec'] > 0
" "$tap_tmp/table.csv" "$tap_tmp/table.json" "$(h5attr "$fg" /multiplex/foreground_samples_per_sec)" \
  "$(h5attr "$fg" /multiplex/background_samples_per_sec)" "$(h5attr "$fg" /multiplex/total_samples_per_sec)"

# ---- one run: CSV and JSON with /multiplex
"$report" "$fg" --csv "$tap_tmp/fg.csv" --json "$tap_tmp/fg.json" >/dev/null &&
  "$report" "$solo" --csv "$tap_tmp/solo.csv" --json "$tap_tmp/solo.json" >/dev/null
tap_ok $? "--csv and --json of one run: exit 0"
py "one-run CSV: the /multiplex series and the background phase per step, equal to the log" "
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
active = [float(x) for x in sys.argv[2].split()]
total = [float(x) for x in sys.argv[3].split()]
lent1 = [float(x) for x in sys.argv[4].split()]
steps = [r for r in rows if r['background_ranks_active'] != '']
def same(got, want):  # the CSV's 15 significant digits
    return len(got) == len(want) and all(abs(float(g) - w) <= 1e-13 * abs(w) for g, w in zip(got, want))
assert same([r['background_ranks_active'] for r in steps], active), steps[:2]
assert same([r['total_samples_per_sec'] for r in steps], total)
assert same([r['phase_background_r1'] for r in steps], lent1)
assert 'phase_paused_r0' in rows[0] and 'foreground_samples_per_sec' in rows[0]
solo = list(csv.DictReader(open(sys.argv[5])))
assert not [k for k in solo[0] if 'background' in k or 'paused' in k or 'foreground' in k], list(solo[0])
" "$tap_tmp/fg.csv" "$(h5vals "$fg" /multiplex/background_ranks_active | tr '\n' ' ')" \
  "$(h5vals "$fg" /multiplex/total_samples_per_sec | tr '\n' ' ')" \
  "$(h5vals "$fg" /ranks/phase_background | rank_column 2 1 | tr '\n' ' ')" "$tap_tmp/solo.csv"
py "one-run JSON: multiplex attributes and series as in the log; none for the run alone" "
import json, math, sys
d = json.load(open(sys.argv[1]))['multiplex']
assert d['role'] == 'foreground' and d['channel'] == sys.argv[2] and d['on_foreground_end'] == 'stop', d
assert abs(d['foreground_samples_per_sec'] - float(sys.argv[3])) < 1e-9 * float(sys.argv[3])
slowdown = float(sys.argv[4])
assert (d['foreground_slowdown'] is None) if math.isnan(slowdown) else abs(d['foreground_slowdown'] - slowdown) < 1e-12
got, want = d['series']['background_samples_per_sec'], [float(x) for x in sys.argv[5].split()]
assert len(got) == len(want) and all(abs(g - w) <= 1e-13 * abs(w) for g, w in zip(got, want))  # cJSON: 15 digits
assert d['series']['step'] == list(range(1, 61)), d['series']['step']
assert 'multiplex' not in json.load(open(sys.argv[6]))
" "$tap_tmp/fg.json" "$(h5attr "$fg" /multiplex/channel)" "$(h5attr "$fg" /multiplex/foreground_samples_per_sec)" \
  "$slowdown" "$(h5vals "$fg" /multiplex/background_samples_per_sec | tr '\n' ' ')" "$tap_tmp/solo.json"

tap_done
