#!/bin/sh
# surge-report on real logs of short trainings (1 and 2 ranks): the summary of one run against the
# values h5dump reads from its log; a 3-run sweep table (the differing keys as columns, sorting);
# CSV and JSON export that parse; SVG figures that are valid XML with one series per run; the log of
# a run killed with SIGKILL; logs with unequal dataset lengths or without /eval; and files that are
# not Surge logs or are damaged, refused with exit 2 and one line naming the path.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

report="$top_build/surge-report"
unit="$top_build/tests/test_report_lib"
command -v h5dump >/dev/null 2>&1 || tap_skip_all "h5dump not installed (Debian: hdf5-tools)"
python=$(command -v python3 || true)

deck="$top_src/inputs/mlp-fmnist.deck"
common="-D data.source=synthetic -D data.synthetic_samples=512 -D model.mlp_hidden=32 -D run.eval_every=10
  -D run.print_every=1000"

# train NAME NP ARGS...: a short training into $tap_tmp/NAME
train() {
  name=$1; np=$2; shift 2
  # shellcheck disable=SC2086
  timeout 120 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$deck" $common -D "run.out_dir=$tap_tmp/$name" "$@" \
    >"$tap_tmp/$name.txt" 2>&1
}


# py TEXT SCRIPT ARGS...: a check in Python (json, csv, xml.dom.minidom); skipped without python3
py() {
  text=$1; shift
  if [ -z "$python" ]; then echo "ok $((tap_n += 1)) - $text # SKIP python3 not installed"; return; fi
  out=$("$python" -c "$@" 2>&1)
  tap_ok $? "$text${out:+: $out}"
}

# refused FILE DESCRIPTION [ARGS...]: surge-report ARGS FILE exits 2 with one line naming FILE
refused() {
  f=$1; what=$2; shift 2
  "$report" "$@" "$f" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  msg=$(cat "$tap_tmp/err.txt")
  [ "$rc" = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] && [ ! -s "$tap_tmp/out.txt" ] &&
    case $msg in "surge: error: $f: "*) true ;; *) false ;; esac
  tap_ok $? "$what is refused: exit $rc, $msg"
}

# ---- one run on 2 ranks: the summary against h5dump
train two 2 -D run.steps=30 -D train.global_batch=32
tap_ok $? "a 30-step training on 2 ranks"
log="$tap_tmp/two/log.h5"
"$report" "$log" >"$tap_tmp/sum.txt" 2>"$tap_tmp/sum.err"
tap_ok $? "summary of one run: exit 0"
n=$(h5vals "$log" /metrics/step | wc -l)
grep -q "^  steps       $n logged (steps 1 to $n) of 30;" "$tap_tmp/sum.txt"
tap_ok $? "$n steps logged, as h5dump counts"
want=$(h5vals "$log" /metrics/loss | tail -n 1 | awk '{printf "%.5g", $1}')
grep -q "^  training loss (nats) *$want (step 30)" "$tap_tmp/sum.txt"
tap_ok $? "final training loss $want = the last /metrics/loss"
best=$(h5vals "$log" /eval/accuracy | paste - /dev/null | awk -v steps="$(h5vals "$log" /eval/step | tr '\n' ' ')" '
  BEGIN { split(steps, s, " ") } NR == 1 || $1 > b { b = $1; at = s[NR] } END { printf "%.4f (step %d)", b, at }')
grep -q "^  eval accuracy (fraction) .* (step [0-9]*) *$best\$" "$tap_tmp/sum.txt"
tap_ok $? "best eval accuracy $best = the highest /eval/accuracy"
h5vals "$log" /metrics/step_time >"$tap_tmp/t.txt"
want=$(h5vals "$log" /metrics/samples_per_sec | paste - "$tap_tmp/t.txt" |
  awk '{ s += $1 * $2; t += $2 } END { printf "%.1f", s / t }')
grep -q "^  samples/s   $want " "$tap_tmp/sum.txt"
tap_ok $? "samples/s $want = sum(samples_per_sec * step_time) / sum(step_time) of the log"
want=$(h5vals "$log" /ranks/phase_comm | awk 'NR % 2 == 0 { s += $1; k++ } END { printf "%.3f", 1e3 * s / k }')
got=$(awk '$1 == "rank" && !col { for (i = 1; i <= NF; i++) if ($i == "comm") col = i }
  col && $1 == "1" { print $col; exit }' "$tap_tmp/sum.txt")
[ -n "$got" ] && [ "$got" = "$want" ]
tap_ok $? "rank 1's comm time per step $got ms = the mean of column 1 of /ranks/phase_comm ($want)"
grep -q '^  share of each rank' "$tap_tmp/sum.txt" && grep -q '^ *rank *compute *data *communication *waiting$' "$tap_tmp/sum.txt"
tap_ok $? "each rank's share by category: compute, data, communication, waiting"
want=$(h5vals "$log" /metrics/bytes_dp | awk '{ s += $1 } END { printf "%.0f", s }')
got=$(awk '$1 == "dp" { print $(NF - 1) }' "$tap_tmp/sum.txt")
[ "$got" = "$want" ] && [ "$want" -gt 0 ]
tap_ok $? "dp traffic $got bytes = the sum of /metrics/bytes_dp"
grep -q '^  \[train\] .*lr=0.05' "$tap_tmp/sum.txt" && grep -q '^  \[run\] .*steps=30' "$tap_tmp/sum.txt"
tap_ok $? "the resolved settings are listed"
grep -q '^Events' "$tap_tmp/sum.txt" && grep -q 'checkpoint' "$tap_tmp/sum.txt"
tap_ok $? "the events are listed"
# (the resolved deck names the run's own log and checkpoint paths: a rerun elsewhere overrides them)
"$report" --deck "$log" >"$tap_tmp/again.deck" &&
  timeout 120 "$mpiexec" -n 1 "$SURGE_TRAIN" "$tap_tmp/again.deck" -D run.steps=2 -D "run.out_dir=$tap_tmp/again" \
    -D "log.file=$tap_tmp/again/log.h5" -D "checkpoint.dir=$tap_tmp/again/checkpoints" >"$tap_tmp/again.txt" 2>&1 &&
  [ "$(h5vals "$log" /metrics/step | wc -l)" = 30 ]
tap_ok $? "--deck prints a deck surge-train runs"

# ---- one run: CSV and JSON
"$report" "$log" --csv "$tap_tmp/one.csv" --json "$tap_tmp/one.json" >/dev/null
tap_ok $? "--csv and --json of one run: exit 0"
want=$(h5vals "$log" /metrics/loss | tail -n 1 | awk '{printf "%.15g", $1}')
got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "loss") col = i } END { print $col }' "$tap_tmp/one.csv")
[ "$(wc -l <"$tap_tmp/one.csv")" = $((n + 1)) ] && [ "$got" = "$want" ]
tap_ok $? "CSV: a header and $n rows; the last loss $got = h5dump's"
py "CSV parses: one row per step, every rank's phases, eval at its steps" "
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == $n, len(rows)
assert 'phase_comm_r0' in rows[0] and 'phase_comm_r1' in rows[0], list(rows[0])
evals = [r['step'] for r in rows if r['eval_accuracy']]
assert evals == ['10', '20', '30'], evals
" "$tap_tmp/one.csv"
py "JSON parses: summary, /metrics, /ranks (steps x 2 ranks), /eval equal to the log" "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['summary']['steps'] == $n and d['run']['ranks'] == 2
assert len(d['metrics']['loss']) == $n and len(d['ranks']['phase_comm']) == $n
assert all(len(row) == 2 for row in d['ranks']['phase_comm'])
assert d['eval']['accuracy'] == [float(x) for x in sys.argv[2].split()], d['eval']['accuracy']
assert d['settings']['train.lr'] == '0.05' and d['units']['/metrics/loss'] == 'nats'
assert d['run']['run_id'] == sys.argv[3], d['run']
" "$tap_tmp/one.json" "$(h5vals "$log" /eval/accuracy | tr '\n' ' ')" \
  "$(h5dump -a /run/run_id "$log" | sed -n 's/^ *(0): "\(.*\)"$/\1/p')"
"$report" "$log" --csv - >"$tap_tmp/stdout.csv"
[ "$(head -c 9 "$tap_tmp/stdout.csv")" = "step,loss" ] && cmp -s "$tap_tmp/stdout.csv" "$tap_tmp/one.csv"
tap_ok $? "--csv - writes the same CSV to standard output, without the summary"

# ---- a sweep of 3 runs on 1 rank: different train.lr and train.global_batch
for spec in "a 0.1 16" "b 0.02 8" "c 0.05 32"; do
  set -- $spec
  train "lr-$1" 1 -D run.steps=20 -D "train.lr=$2" -D "train.global_batch=$3"
  tap_ok $? "training $1: lr $2, batch $3"
done
logs="$tap_tmp/lr-a/log.h5 $tap_tmp/lr-b/log.h5 $tap_tmp/lr-c/log.h5"
"$report" "$tap_tmp/lr-a/log.h5" --csv "$tap_tmp/r1.csv" --json "$tap_tmp/r1.json" >/dev/null
py "a 1-rank log exports /ranks as a 2-rank one does: phase_comm_r0 in the CSV, rows of one rank in the JSON" "
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert 'phase_comm_r0' in rows[0] and 'phase_comm' not in rows[0], list(rows[0])
d = json.load(open(sys.argv[2]))
assert all(isinstance(row, list) and len(row) == 1 for row in d['ranks']['phase_comm']), d['ranks']['phase_comm'][:2]
" "$tap_tmp/r1.csv" "$tap_tmp/r1.json"
# column NAME FILE: the values of table column NAME, space-separated
column() {
  awk -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) col = i; next } { printf "%s ", $col }' "$2"
}
# shellcheck disable=SC2086
"$report" $logs >"$tap_tmp/table.txt"
tap_ok $? "table of 3 runs: exit 0"
head -n 1 "$tap_tmp/table.txt" | grep -q ' train\.global_batch  *train\.lr ' &&
  ! head -n 1 "$tap_tmp/table.txt" | grep -q -e 'out_dir' -e 'log\.file' -e 'run\.seed' &&
  [ "$(wc -l <"$tap_tmp/table.txt")" = 4 ]
tap_ok $? "the swept keys are columns (not the output locations nor equal keys): $(head -n 1 "$tap_tmp/table.txt")"
[ "$(column train.lr "$tap_tmp/table.txt")" = "0.1 0.02 0.05 " ]
tap_ok $? "rows in the order of the command line"
# shellcheck disable=SC2086
"$report" $logs --sort train.global_batch >"$tap_tmp/sorted.txt"
[ "$(column train.lr "$tap_tmp/sorted.txt")" = "0.02 0.1 0.05 " ]
tap_ok $? "--sort train.global_batch is numeric (8, 16, 32): lr $(column train.lr "$tap_tmp/sorted.txt")"
# shellcheck disable=SC2086
"$report" $logs --sort train.lr --desc >"$tap_tmp/sorted.txt"
[ "$(column train.lr "$tap_tmp/sorted.txt")" = "0.1 0.05 0.02 " ]
tap_ok $? "--sort train.lr --desc: $(column train.lr "$tap_tmp/sorted.txt")"
# shellcheck disable=SC2086
"$report" $logs --sort final_loss >"$tap_tmp/sorted.txt"
column final_loss "$tap_tmp/sorted.txt" | tr ' ' '\n' | sed '/^$/d' | sort -g -c
tap_ok $? "--sort final_loss: $(column final_loss "$tap_tmp/sorted.txt")"
# shellcheck disable=SC2086
"$report" $logs --sort nosuch >/dev/null 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && grep -q "no such column.*train.lr" "$tap_tmp/err.txt"
tap_ok $? "--sort of an unknown column: exit $rc, $(cat "$tap_tmp/err.txt")"
# shellcheck disable=SC2086
"$report" $logs --sort train.lr --csv "$tap_tmp/table.csv" --json "$tap_tmp/table.json" >/dev/null
tap_ok $? "--csv and --json of the table: exit 0"
py "table CSV and JSON parse, sorted, with the swept values as numbers" "
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r['train.lr'] for r in rows] == ['0.02', '0.05', '0.1'], rows
d = json.load(open(sys.argv[2]))
assert [r['train.lr'] for r in d] == [0.02, 0.05, 0.1] and [r['train.global_batch'] for r in d] == [8, 32, 16], d
assert all(r['steps'] == 20 and 0 < r['best_accuracy'] <= 1 for r in d), d
" "$tap_tmp/table.csv" "$tap_tmp/table.json"

# ---- figures
# shellcheck disable=SC2086
"$report" $logs --plot "$tap_tmp/fig/sweep" >"$tap_tmp/plot.txt"
rc=$?
ls "$tap_tmp/fig/sweep" | tr '\n' ' ' >"$tap_tmp/ls.txt"
[ $rc = 0 ] && [ "$(cat "$tap_tmp/ls.txt")" = "accuracy.svg loss.svg timeline-1.svg timeline-2.svg timeline-3.svg " ]
tap_ok $? "--plot of 3 runs writes $(cat "$tap_tmp/ls.txt")"
py "the figures are valid XML: one training and one evaluation loss series, one accuracy series per run, labelled axes" "
import sys, xml.dom.minidom as m
d = sys.argv[1]
def groups(doc, cls):
    return [g for g in doc.getElementsByTagName('g') if g.getAttribute('class') == cls]
def title(g):
    return g.getElementsByTagName('title')[0].firstChild.data
def texts(doc):
    return [t.firstChild.data for t in doc.getElementsByTagName('text')]
loss = m.parse(d + '/loss.svg')
train, ev = groups(loss, 'series train'), groups(loss, 'series eval')
assert sorted(title(g) for g in train) == ['global_batch=16, lr=0.1', 'global_batch=32, lr=0.05', 'global_batch=8, lr=0.02'], [title(g) for g in train]
assert len(ev) == 3 and all(len(g.getElementsByTagName('path')) == 1 for g in train + ev)
assert 'Step' in texts(loss) and 'Loss (nats)' in texts(loss), texts(loss)
acc = m.parse(d + '/accuracy.svg')
assert len(groups(acc, 'series accuracy')) == 3 and 'Accuracy (%)' in texts(acc)
for k in (1, 2, 3):
    t = m.parse(d + '/timeline-%d.svg' % k)
    assert len(groups(t, 'phase')) == 6, k
" "$tap_tmp/fig/sweep"
"$report" "$log" --plot "$tap_tmp/fig/two" --step 10 >/dev/null
tap_ok $? "--plot of the 2-rank run with --step 10: exit 0"
py "its timeline shows step 10 with a bar of each phase for ranks 0 and 1 as long as the logged time" "
import sys, xml.dom.minidom as m
doc = m.parse(sys.argv[1])
assert any('phases of step 10 per rank' in t.firstChild.data for t in doc.getElementsByTagName('text'))
comm = [g for g in doc.getElementsByTagName('g') if g.getAttribute('id') == 'phase-comm'][0]
tips = [r.getElementsByTagName('title')[0].firstChild.data for r in comm.getElementsByTagName('rect')]
want = ['rank %d, comm: %.3f ms' % (r, 1e3 * float(v)) for r, v in enumerate(sys.argv[2].split())]
assert tips == want, (tips, want)
" "$tap_tmp/fig/two/timeline.svg" "$(h5vals "$log" /ranks/phase_comm | sed -n '19p;20p' | tr '\n' ' ')"
refused "$log" "--step 999 (not in the log)" --plot "$tap_tmp/fig/none" --step 999

# ---- a run killed with SIGKILL: the report reads its log up to the last flush
"$SURGE_TRAIN" "$deck" $common -D run.steps=1000000 -D log.flush_every=5 -D "run.out_dir=$tap_tmp/killed" \
  >"$tap_tmp/killed.txt" 2>&1 &
pid=$!
# killed_log_has_40: the log of that run has flushed 40 steps at least
killed_log_has_40() {
  rows=$(h5ls "$tap_tmp/killed/log.h5/metrics/step" 2>/dev/null | sed -n 's/.*{\([0-9]*\)\/Inf}.*/\1/p')
  [ "${rows:-0}" -ge 40 ]
}
tap_wait_until 30 killed_log_has_40
kill -9 $pid
wait $pid 2>/dev/null
killed="$tap_tmp/killed/log.h5"
n=$(h5vals "$killed" /metrics/step | wc -l)
"$report" "$killed" --csv "$tap_tmp/killed.csv" >"$tap_tmp/killed-sum.txt" 2>&1
rc=$?
# the steps it reports: every flushed one, or, where the kill fell inside a flush (some datasets extended by it,
# others not: once under make -j2 check), those of the flush before (at most one flush short), the others noted as
# incomplete rows
m=$(sed -n 's/^  steps       \([0-9]*\) logged (steps 1 to \1) of 1000000;.*/\1/p' "$tap_tmp/killed-sum.txt")
[ $rc = 0 ] && [ "${m:-0}" -ge 35 ] && [ $((m % 5)) = 0 ] && [ "$m" -le "$n" ] && [ "$m" -ge $((n - 5)) ] &&
  { [ "$m" = "$n" ] ||
    grep -q "^  note        /metrics: [0-9]* incomplete rows left out" "$tap_tmp/killed-sum.txt"; } &&
  grep -q "^  note        short of step 1000000" "$tap_tmp/killed-sum.txt" &&
  [ "$(wc -l <"$tap_tmp/killed.csv")" = $((m + 1)) ]
tap_ok $? "the log of a run killed with SIGKILL reports its ${m:-no} flushed steps ($n of /metrics/step; exit $rc)"

# ---- partial logs: unequal lengths (a kill during a flush), no /eval and /events
n=$(h5vals "$log" /metrics/step | wc -l)
cp "$log" "$tap_tmp/cut.h5" && "$unit" cut "$tap_tmp/cut.h5" 2
"$report" "$tap_tmp/cut.h5" >"$tap_tmp/cut.txt" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "^  steps       $((n - 2)) logged" "$tap_tmp/cut.txt" &&
  grep -q "^  note        /metrics: 2 incomplete rows left out" "$tap_tmp/cut.txt" &&
  grep -q "^  note        /ranks: 2 incomplete rows left out" "$tap_tmp/cut.txt"
tap_ok $? "datasets of unequal length: the rows all hold are reported, the others counted (exit $rc)"
cp "$log" "$tap_tmp/noeval.h5" && "$unit" drop "$tap_tmp/noeval.h5" /eval && "$unit" drop "$tap_tmp/noeval.h5" /events
"$report" "$tap_tmp/noeval.h5" --plot "$tap_tmp/fig/noeval" >"$tap_tmp/noeval.txt" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "^  no evaluation logged" "$tap_tmp/noeval.txt" && ! grep -q "^Events" "$tap_tmp/noeval.txt" &&
  [ -f "$tap_tmp/fig/noeval/loss.svg" ] && [ ! -f "$tap_tmp/fig/noeval/accuracy.svg" ]
tap_ok $? "a log without /eval and /events: summary and figures without them (exit $rc)"
"$report" "$tap_tmp/noeval.h5" "$log" >"$tap_tmp/mixed.txt" 2>&1
[ "$(column best_accuracy "$tap_tmp/mixed.txt" | cut -d' ' -f1)" = "-" ]
tap_ok $? "in a table, a run without evaluations has no best_accuracy"

# ---- damaged logs (issue 17): a column of the format that is not what it should be is refused,
# naming it; one the log lacks, or that lacks more rows than a flush, is shown as missing; numbers out
# of range and steps that do not increase are refused; text is shown with control characters escaped
refused_naming() { # refused_naming FILE DATASET WHAT: exit 2, one line naming FILE and DATASET
  "$report" "$1" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] && grep -q "^surge: error: $1: .*$2" "$tap_tmp/err.txt"
  tap_ok $? "$3: exit $rc, $(head -c 300 "$tap_tmp/err.txt")"
}
for kind in 2d group strings; do
  cp "$log" "$tap_tmp/dmg.h5" && "$unit" damage "$tap_tmp/dmg.h5" /metrics/loss $kind
  refused_naming "$tap_tmp/dmg.h5" "/metrics/loss" "/metrics/loss replaced by a $kind"
done
cp "$log" "$tap_tmp/dmg.h5" && "$unit" damage "$tap_tmp/dmg.h5" /ranks/phase_comm strings
refused_naming "$tap_tmp/dmg.h5" "/ranks/phase_comm holds strings" "/ranks/phase_comm replaced by strings"
cp "$log" "$tap_tmp/dmg.h5" && "$unit" damage "$tap_tmp/dmg.h5" /metrics/step value=-5@4
refused_naming "$tap_tmp/dmg.h5" "/metrics/step holds -5 at row 4" "a negative step"
cp "$log" "$tap_tmp/dmg.h5" && "$unit" damage "$tap_tmp/dmg.h5" /metrics/step value=3@9
refused_naming "$tap_tmp/dmg.h5" "/metrics/step goes from 9 to 3 at row 9" "a step that goes back"
cp "$log" "$tap_tmp/dmg.h5" && "$unit" damage "$tap_tmp/dmg.h5" /metrics/step_time value=-1@2
refused_naming "$tap_tmp/dmg.h5" "/metrics/step_time holds -1 at row 2" "a negative step time"
cp "$log" "$tap_tmp/dmg.h5" && "$unit" damage "$tap_tmp/dmg.h5" /eval/accuracy value=1e300@0
refused_naming "$tap_tmp/dmg.h5" "/eval/accuracy holds 1.0000000000000001e.300 at row 0" "an accuracy of 1e300"
# range checks without holes (issue 36): -1 is a value like any other, not "absent"; a column longer
# than /metrics/step by more than a flush is refused, one longer by less is said on stderr
hostile="$top_build/tests/h5_hostile"
for a in ranks flush_every global_batch; do
  cp "$log" "$tap_tmp/dmg.h5" && "$hostile" "$tap_tmp/dmg.h5" /run "i64:$a=-1"
  refused_naming "$tap_tmp/dmg.h5" "/run@$a is -1, outside" "/run@$a = -1"
done
# a column of 4-byte integers recorded with 993 bits of precision: HDF5 1.10 would convert past its
# own locals (fuzz_sim found the like in a surge-sim file)
cp "$log" "$tap_tmp/dmg.h5" && "$hostile" "$tap_tmp/dmg.h5" /metrics/loss bits=993
refused_naming "$tap_tmp/dmg.h5" "damaged Surge log: /metrics/loss holds numbers of a type whose recorded layout is impossible" \
  "/metrics/loss as integers claiming 993 bits in 4 bytes"
rows=$(h5vals "$log" /metrics/step | wc -l)
cp "$log" "$tap_tmp/dmg.h5" && "$hostile" "$tap_tmp/dmg.h5" /metrics/loss "rows=$((rows + 500))"
refused_naming "$tap_tmp/dmg.h5" "/metrics/loss has $((rows + 500)) rows, 500 more than its step scale's $rows" \
  "/metrics/loss 500 rows longer than /metrics/step"
cp "$log" "$tap_tmp/dmg.h5" && "$hostile" "$tap_tmp/dmg.h5" /metrics/loss "rows=$((rows + 1))"
"$report" "$tap_tmp/dmg.h5" --csv "$tap_tmp/long.csv" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 0 ] && grep -q "warning: .*dmg.h5: /metrics: 1 incomplete row left out" "$tap_tmp/err.txt"
tap_ok $? "a column one row longer than /metrics/step (a kill during a flush): what is left out is said on stderr (exit $rc)"
cp "$log" "$tap_tmp/dmg.h5" && "$unit" damage "$tap_tmp/dmg.h5" /metrics/lr extent=100000000
refused_naming "$tap_tmp/dmg.h5" "/metrics/lr claims 100000000 values, but the file stores" \
  "10^8 rows claimed with none stored (refused before allocating)"
# surge-report reads logs and their decks, no model: linked with a BLAS, the BLAS's threads spun at
# exit under the address-space limit below and the refusal never exited (the deck's layout key once
# pulled the layouts' code in)
if ldd "$report" 2>/dev/null | grep -q libasan; then # the sanitizers link every library named, used or not
  tap_skip "surge-report links no BLAS library: not seen under AddressSanitizer (it links every -l library)"
else
  found=$(ldd "$report" 2>/dev/null | grep -i "blas")
  [ -z "$found" ]
  tap_ok $? "surge-report links no BLAS library${found:+: $found}"
fi
# found by fuzz_log: a string claimed 4 GiB long in a 180 KB file cost HDF5's reader 4 GB of memory
big="$top_src/fuzz/regressions/log/events-text-length-4gib.h5"
# (AddressSanitizer reserves terabytes of address space for its shadow: no limit under it)
limit=1000000 space="1 GB address space"
ldd "$report" 2>/dev/null | grep -q libasan && limit=unlimited space="no address-space limit under AddressSanitizer"
( ulimit -v $limit; exec timeout 120 "$report" "$big" ) >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && grep -q "^surge: error: .*events-text-length-4gib.h5: damaged Surge log: /events/text: string 0 claims 4160749568 bytes" "$tap_tmp/err.txt"
tap_ok $? "a string claiming 4 GiB is refused before HDF5 allocates it ($space; exit $rc): $(head -c 200 "$tap_tmp/err.txt")"
# found by fuzz_log: a chunk recorded smaller than its chunks made HDF5 copy a whole chunk out of the
# smaller buffer (a heap overflow under AddressSanitizer, garbage values without)
"$report" "$top_src/fuzz/regressions/log/chunk-smaller-than-its-chunks.h5" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && grep -q "^surge: error: .*: damaged Surge log: /metrics/bytes_dp has a chunk of 0 bytes where its chunks hold 4096" "$tap_tmp/err.txt"
tap_ok $? "a chunk smaller than its chunks is refused before HDF5 reads it (exit $rc): $(head -c 200 "$tap_tmp/err.txt")"
cp "$log" "$tap_tmp/dmg.h5" && "$unit" drop "$tap_tmp/dmg.h5" /metrics/lr && "$unit" damage "$tap_tmp/dmg.h5" /metrics/loss short
"$report" "$tap_tmp/dmg.h5" --csv "$tap_tmp/dmg.csv" --json "$tap_tmp/dmg.json" >"$tap_tmp/dmg.txt" 2>"$tap_tmp/dmg.err"
rc=$?
[ $rc = 0 ] && grep -q "^  damaged     /metrics/lr: missing from the log (shown without values)" "$tap_tmp/dmg.txt" &&
  grep -q "^  damaged     /metrics/loss: 27 of its rows missing from the log" "$tap_tmp/dmg.txt" &&
  grep -q "^  steps       30 logged" "$tap_tmp/dmg.txt" &&
  grep -q "warning: .*dmg.h5: /metrics/lr: missing from the log" "$tap_tmp/dmg.err" &&
  [ "$(head -n 1 "$tap_tmp/dmg.csv" | tr ',' '\n' | grep -c -x -e loss -e lr)" = 2 ] &&
  [ "$(sed -n '31p' "$tap_tmp/dmg.csv" | cut -d, -f2,3)" = "," ] &&
  grep -q '"damaged":' "$tap_tmp/dmg.json"
tap_ok $? "a missing and a short column are reported in the summary, on stderr, as empty CSV fields and in the JSON; the rest is shown (exit $rc)"
cp "$log" "$tap_tmp/dmg.h5" && "$unit" damage "$tap_tmp/dmg.h5" /ranks/phase_comm narrow
"$report" "$tap_tmp/dmg.h5" --csv "$tap_tmp/dmg.csv" >"$tap_tmp/dmg.txt" 2>"$tap_tmp/dmg.err"
rc=$?
[ $rc = 0 ] && grep -q "^  damaged     /ranks/phase_comm: the columns of its last 1 of 2 ranks missing" "$tap_tmp/dmg.txt" &&
  grep -q "warning: .*dmg.h5: /ranks/phase_comm: the columns of its last 1 of 2 ranks" "$tap_tmp/dmg.err" &&
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["phase_comm_r1"] != "" || $c["phase_data_r1"] == "" || $c["phase_comm_r0"] == "" { bad = 1 }
    END { exit bad || !c["phase_data_r1"] }' "$tap_tmp/dmg.csv"
tap_ok $? "a /ranks column narrower than /ranks/rank is damage: reported, its lost rank empty, the other phases keep rank 1 (exit $rc)"
# ... and one whose widening would pass the reader's 2^28 values (a deflated /ranks/rank of 2^24 zeros,
# 360 KB) is refused before it allocates
cp "$log" "$tap_tmp/dmg.h5" && "$unit" damage "$tap_tmp/dmg.h5" /ranks/rank deflated=16777216
refused "$tap_tmp/dmg.h5" "a /ranks/rank of 2^24 ranks beside 2-column phases (30 steps: 5e8 values)"
grep -q 'has 2 columns where /ranks/rank names 16777216 ranks, and 30 rows of them would be 503316480 values, more than the 268435456' \
  "$tap_tmp/err.txt"
tap_ok $? "... by the widening's bound, before it allocates"
cp "$log" "$tap_tmp/dmg.h5" && "$unit" damage "$tap_tmp/dmg.h5" /events/text 'text=\e[2J\e[31mowned\n@0'
"$report" "$tap_tmp/dmg.h5" >"$tap_tmp/dmg.txt" 2>&1
rc=$?
[ $rc = 0 ] && ! grep -q "$(printf '\033')" "$tap_tmp/dmg.txt" && grep -q 'x1b\[2J\\x1b\[31mowned' "$tap_tmp/dmg.txt"
tap_ok $? "an event's control characters are shown escaped, never sent to the terminal (exit $rc): $(grep owned "$tap_tmp/dmg.txt")"

# ---- files that are not Surge logs, or are damaged
printf 'step,loss\n1,2.3\n' >"$tap_tmp/text.h5"
refused "$tap_tmp/text.h5" "a text file"
"$top_build/tests/test_log" make-foreign "$tap_tmp" # norun.h5 (no /run) and other.h5 (another program)
refused "$tap_tmp/norun.h5" "an HDF5 file without /run"
refused "$tap_tmp/other.h5" "an HDF5 file of another program"
size=$(wc -c <"$log")
head -c $((size / 2)) "$log" >"$tap_tmp/half.h5"
refused "$tap_tmp/half.h5" "a log cut in half"
refused "$tap_tmp/missing.h5" "a missing file"
refused "$tap_tmp" "a directory"
refused "$tap_tmp/text.h5" "a bad log after a good one (the bad one is named)" "$log"

tap_done
