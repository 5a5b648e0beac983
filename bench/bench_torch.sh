#!/bin/sh
# make bench BENCH=torch: Surge against PyTorch's CPU training of the same models (bench/torch_models.py,
# the decks of bench_models.c: mlp 784-512-512-10 and vgg-mini at batch 128, gpt 4 x 256 with context
# 128 at batch 16; same optimizers), in one invocation: per model and kernel width (BENCH_TORCH_SIMD,
# default "auto avx2"; WIDTH/blas: Surge with backend.gemm = blas, OpenBLAS for every matrix product
# instead of its own AVX-512 SGEMM), BENCH_TORCH_PAIRS (default 3) rounds of alternating runs, each round
# every width in turn: Surge on 1 rank, PyTorch on 1 thread, Surge on 2 ranks (data parallel, one BLAS
# thread each), PyTorch on 2 threads (BENCH_TORCH_COUNTS="1 2"; 1 or 2: those runs alone, the others
# "-"); the medians, and the ratios PyTorch ms / Surge ms (above 1: Surge is faster).
#
# PyTorch runs the OpenMP OpenBLAS of libopenblas0-openmp where it is installed, for itself alone
# (LD_LIBRARY_PATH; the system's libblas alternative, which Surge links, is left as it is), with
# OMP_NUM_THREADS and torch.set_num_threads set to its thread count; oneDNN (in torch) runs its
# convolutions. In the simd = avx2 rows oneDNN is capped at AVX2 too (ONEDNN_MAX_CPU_ISA): both sides
# as on a CPU without AVX-512 (OpenBLAS picks its own kernels for both; torch's own loops report
# AVX2 in its build). Without /usr/bin/python3's torch (Debian: python3-torch) it says so and skips.
# Surge's times come from bench_models --rate (synthetic data, wall time over all ranks). Each run
# times about BENCH_SECONDS (default 3) of steps after a warm-up.
# Called by bench/run-bench.sh from the build directory with MPIEXEC set.
set -eu
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
python=${BENCH_PYTHON:-/usr/bin/python3}
models=${BENCH_TORCH_MODELS:-mlp vgg-mini gpt}
widths=${BENCH_TORCH_SIMD:-auto avx2}
pairs=${BENCH_TORCH_PAIRS:-3}
counts=${BENCH_TORCH_COUNTS:-1 2}
seconds=${BENCH_SECONDS:-3}
case $pairs in '' | *[!0-9]* | 0) echo "bench_torch.sh: BENCH_TORCH_PAIRS=$pairs: expected a positive count" >&2; exit 2 ;; esac
case $counts in "1 2" | 1 | 2) ;; *) echo "bench_torch.sh: BENCH_TORCH_COUNTS=$counts: expected 1, 2 or \"1 2\"" >&2; exit 2 ;; esac
if ! why=$("$python" -c 'import torch' 2>&1); then
  echo "-- torch: skipped: $python cannot import torch (Debian: apt-get install python3-torch): $(echo "$why" | tail -n 1)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/lib.sh"

omp_blas=/usr/lib/x86_64-linux-gnu/openblas-openmp
if [ -e "$omp_blas/libblas.so.3" ]; then
  torch_blas="OpenMP OpenBLAS ($omp_blas, for PyTorch alone)"
  torch_path=$omp_blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  torch_blas="the system's libblas (libopenblas0-openmp is not installed)"
  torch_path=${LD_LIBRARY_PATH:-}
fi
torch_ms() { # torch_ms MODEL THREADS SIMD[/blas]: ms a step
  isa=$(case ${3%/blas} in avx2) echo AVX2 ;; *) echo ALL ;; esac)
  env LD_LIBRARY_PATH="$torch_path" OMP_NUM_THREADS="$2" OPENBLAS_NUM_THREADS="$2" ONEDNN_MAX_CPU_ISA="$isa" \
    DNNL_MAX_CPU_ISA="$isa" "$python" "$src/bench/torch_models.py" "$1" "$2" "$seconds"
}
surge_ms() { # surge_ms MODEL RANKS SIMD[/blas]: ms a step (the global batch over the samples/s of all ranks)
  gemm=$(case $3 in */blas) echo blas ;; *) echo auto ;; esac)
  rate=$(BENCH_SIMD=${3%/blas} BENCH_GEMM=$gemm BENCH_SECONDS=$seconds "$mpiexec" -n "$2" ./bench/bench_models --rate "$1")
  batch=$(case $1 in gpt) echo 16 ;; *) echo 128 ;; esac)
  awk -v b="$batch" -v r="$rate" 'BEGIN { printf "%.3f\n", 1e3 * b / r }'
}

echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores; AVX-512F: $(grep -q avx512f /proc/cpuinfo && echo yes || echo no), AVX2: $(grep -q avx2 /proc/cpuinfo && echo yes || echo no)"
echo "# PyTorch $("$python" -c 'import torch; print(torch.__version__)'), BLAS: $torch_blas"
echo "# medians of $pairs alternating rounds, ms a step; ratio: PyTorch ms / Surge ms; simd = avx2 rows: oneDNN capped at AVX2"
printf '%-9s %-9s %9s %9s %7s %9s %9s %7s\n' model simd "surge 1r" "torch 1t" ratio "surge 2r" "torch 2t" ratio
for m in $models; do
  rm -f "$tmp"/s[12].* "$tmp"/t[12].* # this model's times alone
  i=0
  while [ $i -lt "$pairs" ]; do # every width in each round, so the widths' rows meet the same load
    j=0
    for w in $widths; do
      j=$((j + 1))
      for n in $counts; do
        surge_ms "$m" "$n" "$w" >>"$tmp/s$n.$j"
        torch_ms "$m" "$n" "$w" >>"$tmp/t$n.$j"
      done
    done
    i=$((i + 1))
  done
  j=0
  for w in $widths; do
    j=$((j + 1))
    printf '%-9s %-9s' "$m" "$w"
    for n in 1 2; do
      if [ -f "$tmp/s$n.$j" ]; then
        awk -v s="$(median <"$tmp/s$n.$j")" -v t="$(median <"$tmp/t$n.$j")" 'BEGIN { printf " %9.2f %9.2f %7.2f", s, t, t / s }'
      else
        printf ' %9s %9s %7s' - - -
      fi
    done
    echo
  done
done
