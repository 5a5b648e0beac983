#!/bin/sh
# surge-report on surge-sim result files whose shapes, counts and values lie (issue 36): every
# dataset is read through one checked reader (src/sim/sim_read.c), so a column shorter than its
# table, a stage beyond the grid, a NaN or a zero the report divides by is refused with one line
# naming the file and the HDF5 path (exit 2), before it is indexed, divided by or allocated for.
# Before, such files read past heap buffers (exit 139), asked for 8 GB or overflowed an integer.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
sim="$top_build/surge-sim"
report="$top_build/surge-report"
hostile="$top_build/tests/h5_hostile"
damage="$top_build/tests/test_report_lib"
"$sim" --deeppool "$top_src/tests/data/deeppool/A100_vgg.prof" --network a100 --ranks 8,64 --batch 32,256 --eval 4 \
  -o "$tap_tmp/burst.h5" >/dev/null 2>&1
tap_ok $? "surge-sim: a burst file (G = 8, 64)"
"$sim" --graph "$top_src/inputs/gpt-2.5b.graph" --tp 8 --pp 4 --dp 4 --micro-batches 16 --micro-batch 8 \
  --cb-ratio 41.7 -o "$tap_tmp/3d.h5" >/dev/null 2>&1
tap_ok $? "surge-sim: a 3D file (pp 4, 16 micro-batches)"
for f in burst 3d; do
  "$report" --plot "$tap_tmp/fig-$f" "$tap_tmp/$f.h5" >/dev/null 2>&1
  tap_ok $? "surge-report reads the untouched $f file"
done

# hostile TEXT BASE PATTERN TOOL ARGS...: a copy of BASE.h5 edited by TOOL (h5_hostile or
# test_report_lib damage) is refused by surge-report --plot: exit 2, one line matching PATTERN
n=0
hostile_case() {
  text=$1 base=$2 pattern=$3; shift 3
  n=$((n + 1))
  f="$tap_tmp/bad$n.h5"
  cp "$tap_tmp/$base.h5" "$f" && "$@" >/dev/null 2>&1 || { tap_ok 1 "$text: the edit failed"; return; }
  timeout 60 "$report" --plot "$tap_tmp/fig$n" "$f" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  [ $rc = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] && grep -q "bad$n\.h5: $pattern" "$tap_tmp/err.txt"
  tap_ok $? "$text: exit $rc ($(head -c 240 "$tap_tmp/err.txt"))"
}
rows() { "$hostile" "$f" "$1" "rows=$2"; }
value() { "$damage" damage "$f" "$1" "value=$2"; }
attr() { "$hostile" "$f" "$1" "$2"; }
strings_in() { "$damage" damage "$f" "$1" strings; }
wide() { rows "$1" "$2" && value "$1" "$3"; } # an integer column made doubles, then a value beyond int32
bits() { "$hostile" "$f" "$1" "bits=$2"; } # 4-byte integers recorded with $2 bits of precision

hostile_case "a batch column shorter than /sim/burst/ranks" burst \
  "/sim/burst/global_batch has 1 rows where its table has 2" rows /sim/burst/global_batch 1
hostile_case "an empty data-parallel time column" burst "/sim/burst/dp_iter_us has 0 rows where its table has 2" \
  rows /sim/burst/dp_iter_us 0
hostile_case "a longer throughput column" burst "/sim/burst/best_over_dp has 5 rows where its table has 2" \
  rows /sim/burst/best_over_dp 5
hostile_case "a frontier's rank-times shorter than its times" burst \
  "/sim/burst/G8/frontier_rank_us has 1 rows where its table has" rows /sim/burst/G8/frontier_rank_us 1
hostile_case "a rank count of -1" burst "/sim/burst/ranks holds -1 at row 0, not a whole number in \[1, 16777216\]" \
  value /sim/burst/ranks -1@0
hostile_case "a data-parallel time of 0 (divided by)" burst "/sim/burst/dp_iter_us holds 0 at row 1, not a number in" \
  value /sim/burst/dp_iter_us 0@1
hostile_case "a NaN frontier time" burst "/sim/burst/G64/frontier_iter_us holds nan at row 0" \
  value /sim/burst/G64/frontier_iter_us nan@0
hostile_case "a stage of 10^9 (an 8 GB allocation)" 3d \
  "/sim/pipeline/plain_op_stage holds 1e+09 at row 0, not a whole number in \[0, 3\]" \
  value /sim/pipeline/plain_op_stage 1e9@0
hostile_case "a stage of 2^31 (an integer overflow)" 3d "/sim/pipeline/compressed_op_stage holds 2147483648 at row 2" \
  wide /sim/pipeline/compressed_op_stage 128 2147483648@2
hostile_case "an operation kind column of 1 row (read past its end)" 3d \
  "/sim/pipeline/plain_op_kind has 1 rows where its table has 128" rows /sim/pipeline/plain_op_kind 1
hostile_case "more stages than the file has operations for" 3d "/sim/pipeline/plain_op_stage has 128 rows where its table has 256" \
  attr /sim/pipeline i64:pp=8
hostile_case "a pipeline of 2^40 stages" 3d "/sim/pipeline@pp is 1099511627776, not a whole number in \[1, 1048576\]" \
  attr /sim/pipeline i64:pp=1099511627776
hostile_case "a NaN iteration time" 3d "/sim/pipeline@plain_iter_us is nan, not a number in" \
  attr /sim/pipeline f64:plain_iter_us=nan
hostile_case "a bubble of 5" 3d "/sim/pipeline@compressed_bubble is 5, not a number in \[0, 1\]" \
  attr /sim/pipeline f64:compressed_bubble=5
hostile_case "an operation time of -1" 3d "/sim/pipeline/plain_op_send_end_us holds -1 at row 7" \
  value /sim/pipeline/plain_op_send_end_us -1@7
hostile_case "a micro-batch past the grid" 3d "/sim/pipeline/plain_op_micro_batch holds 16 at row 0, not a whole number in \[0, 15\]" \
  value /sim/pipeline/plain_op_micro_batch 16@0
hostile_case "a string where a column belongs" 3d "/sim/pipeline/plain_op_end_us is not a 1-D dataset of numbers" \
  strings_in /sim/pipeline/plain_op_end_us
hostile_case "a column of 4-byte integers recorded with 993 bits (HDF5 would convert past its locals)" 3d \
  "/sim/pipeline/plain_op_micro_batch holds numbers of a type whose recorded layout is impossible" \
  bits /sim/pipeline/plain_op_micro_batch 993
hostile_case "an attribute of 4-byte integers recorded with 993 bits" 3d "/sim/pipeline@pp is missing or not a number" \
  attr /sim/pipeline bad:pp=993
# found by fuzz_sim: integer columns whose recorded bits lie outside their 4 bytes made HDF5 1.10's
# conversion overflow a local of its own (stack smashing, an abort) or read far past it (SIGBUS)
for f in integer-precision-993-bits-in-4-bytes:compressed_op_compressed integer-offset-8192-bits-in-4-bytes:plain_op_stage; do
  "$report" --plot "$tap_tmp/fig-${f%%:*}" "$top_src/fuzz/regressions/sim/${f%%:*}.h5" >/dev/null 2>"$tap_tmp/err.txt"
  rc=$?
  [ $rc = 2 ] && grep -q "^surge: error: .*${f%%:*}.h5: /sim/pipeline/${f#*:} holds numbers of a type whose recorded layout is impossible" "$tap_tmp/err.txt"
  tap_ok $? "${f%%:*}: refused before HDF5 converts it (exit $rc): $(head -c 240 "$tap_tmp/err.txt")"
done
"$report" "$tap_tmp/3d.h5" --csv "$tap_tmp/3d.csv" >/dev/null 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && grep -q "3d.h5: --csv applies to training logs" "$tap_tmp/err.txt" && [ ! -e "$tap_tmp/3d.csv" ]
tap_ok $? "--csv of a surge-sim file is refused, not ignored (exit $rc)"
tap_done
