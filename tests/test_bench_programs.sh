#!/bin/sh
# The benchmark programs of make bench are built with the tests and each runs briefly here, so an
# interface change that breaks one fails CI instead of the next person's `make bench`. Numbers are
# not judged (benchmarks are ratios measured in make bench, never timed assertions): a program
# must exit 0 and print its table with finite positive values; checkpoints must read back exact.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
bench="$top_build/bench"
out="$tap_tmp/out.txt"

# run NAME COMMAND...: at most 120 s, exit 0; the output stays in $out.
run() {
  name=$1; shift
  timeout 120 "$@" >"$out" 2>"$tap_tmp/err.txt"
  rc=$?
  tap_ok $rc "$name: exit 0"
  [ $rc = 0 ] || tap_diag "exit $rc" "$(tail -5 "$tap_tmp/err.txt")"
}

# positive FIELD...: every field a finite number above 0.
positive() {
  for f in "$@"; do
    awk -v v="$f" 'BEGIN { exit !(v + 0 > 0 && v + 0 < 1e30 && v ~ /^[0-9.eE+-]+x?$/) }' || return 1
  done
}

BENCH_SECONDS=0.1 run "bench_models --rate mlp on 2 ranks" "$mpiexec" -n 2 "$bench/bench_models" --rate mlp
rate=$(cat "$out")
positive "$rate"
tap_ok $? "bench_models --rate prints samples/s ($rate)"

BENCH_SECONDS=0.1 run "bench_models table for mlp" "$bench/bench_models" --dp mlp=100,190 mlp
row=$(grep '^mlp ' "$out")
# model batch samples/s step compute square /sq /sq shapes /sh dp1 dp2 dpx MiB need ratio
# shellcheck disable=SC2086
positive $(echo "$row" | awk '{ $1 = ""; print }')
tap_ok $? "bench_models table row: every column a positive number"
[ "$(echo "$row" | awk '{ print $13 }')" = "1.90x" ]
tap_ok $? "bench_models table carries the --dp speed-up (1.90x)"
grep -q '^ *step [0-9.]* ms: data [0-9]*%, forward' "$out"
tap_ok $? "bench_models prints the step's phases"

BENCH_SIMD=none BENCH_SECONDS=0.1 run "bench_models --rate vgg-mini at simd = none" "$bench/bench_models" --rate vgg-mini
rate=$(cat "$out")
positive "$rate"
tap_ok $? "bench_models --rate at BENCH_SIMD=none prints samples/s ($rate)"
run "bench_models refuses a width that is no deck value" sh -c "BENCH_SIMD=sse9 '$bench/bench_models' --rate mlp; [ \$? = 2 ]"
grep -q 'simd: "sse9" is not an accepted value' "$tap_tmp/err.txt"
tap_ok $? "bench_models names the refused width"

run "bench_gemm, one round" "$bench/bench_gemm" 1
grep -q '^gpt fc1 fwd .*[0-9]x\( \|$\)' "$out" && grep -q '^# CPU: ' "$out" && grep -q '^# load average after' "$out"
tap_ok $? "bench_gemm prints the CPU, the load and a ratio per shape"
if grep -q '\bavx2\b' /proc/cpuinfo && grep -q '\bfma\b' /proc/cpuinfo; then
  grep -q '^# float FMA peak at 8 floats (AVX2 + FMA): [1-9][0-9.]* GFLOP/s' "$out" &&
    grep -q '^gpt fc1 fwd .* 0\.[0-9][0-9] *$\|^gpt fc1 fwd .* [1-9]\.[0-9][0-9] *$' "$out"
  tap_ok $? "bench_gemm measures the FMA peak and gives each own kernel's share of it"
  grep -q '^fp32 few rows  *\* *0  1  *16  *768  *256 .*[0-9.]*x$' "$out"
  tap_ok $? "bench_gemm puts fp32's few-row kernel against OpenBLAS, marking the shapes cpu_gemm gives it"
fi
if grep -q '\bavx512_bf16\b' /proc/cpuinfo && grep -q '\bavx512bw\b' /proc/cpuinfo; then
  grep -q '^bf16 few rows  *0  1  *16  *768  *256 .*[0-9.]*x$' "$out"
  tap_ok $? "bench_gemm puts bf16's few-row products against the packed GEMM"
else
  ! grep -q '^bf16 few rows' "$out"
  tap_ok $? "bench_gemm has no few-row bf16 table without AVX-512 BF16"
fi
BENCH_GEMM=blas BENCH_SECONDS=0.1 run "bench_models --rate gpt with gemm = blas" "$bench/bench_models" --rate gpt
positive "$(cat "$out")"
tap_ok $? "bench_models --rate at BENCH_GEMM=blas prints samples/s ($(cat "$out"))"
(cd "$top_build" && BENCH_SECONDS=0.1 BENCH_BF16_ROUNDS=1 BENCH_BF16_MODELS=mlp BENCH_BF16_TOKENS=8 \
  MPIEXEC="$mpiexec" sh "$top_src/bench/bench_bf16.sh") >"$out" 2>"$tap_tmp/err.txt"
tap_ok $? "bench_bf16.sh, one round of mlp and of 8 generated tokens: exit 0"
positive $(awk '$1 == "mlp" || $1 == "1" || $1 == "16" { print $2, $3, $4 }' "$out") &&
  grep -q '^# CPU: .*bf16 products here: ' "$out" && [ "$(awk '$1 == "1" || $1 == "16"' "$out" | wc -l)" = 2 ]
tap_ok $? "bench_bf16.sh prints the CPU, its bf16 form, mlp's and generation's fp32 and bf16 rates with their ratios"

# make bench BENCH=torch without PyTorch: it says so and skips (never part of make check's needs)
run "bench_torch.sh without torch" env BENCH_PYTHON="$tap_tmp/no-python" sh "$top_src/bench/bench_torch.sh"
grep -q '^-- torch: skipped: .*cannot import torch' "$out"
tap_ok $? "bench_torch.sh skips with the reason where torch is absent"

run "bench_models refuses an unknown model" sh -c "! '$bench/bench_models' no-such-model"
grep -q "unknown model no-such-model" "$tap_tmp/err.txt"
tap_ok $? "bench_models names the unknown model"

run "bench_checkpoint on 2 ranks" "$mpiexec" -n 2 "$bench/bench_checkpoint" 1 "$tap_tmp"
for m in none shuffle-deflate; do
  grep -q "^| $m  *|.*| yes   |$" "$out"
  tap_ok $? "bench_checkpoint: $m reads back exact"
done

run "bench_allreduce on 2 ranks" "$mpiexec" -n 2 "$bench/bench_allreduce"
grep -q '^# comm/raw busbw, mean over sizes >= 1 MiB' "$out"
tap_ok $? "bench_allreduce prints its summary"

run "bench_planner" "$bench/bench_planner"
[ "$(grep -c '^branchy' "$out")" -ge 1 ]
tap_ok $? "bench_planner prints its rows"

"$bench/bench_gpu_gemm" >"$out" 2>&1
rc=$?
[ $rc = 0 ] || [ $rc = 77 ]
tap_ok $? "bench_gpu_gemm runs or skips without a GPU (exit $rc)"

if [ -x "$bench/bench_gpu_attention" ]; then
  "$bench/bench_gpu_attention" >"$out" 2>&1
  rc=$?
  { [ $rc = 77 ] && grep -q "skipped, no GPU" "$out"; } || { [ $rc = 0 ] && grep -q "^gpt-3d .*auto" "$out"; }
  tap_ok $? "bench_gpu_attention runs or skips without a GPU, saying why (exit $rc)"
else
  tap_skip "bench_gpu_attention: not built (no CUDA toolkit)"
fi
tap_done
