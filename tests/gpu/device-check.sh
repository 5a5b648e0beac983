#!/bin/sh
# tests/gpu/device-check.sh OUTDIR: everything of the GPU path that needs a GPU, in one run on a
# machine with one NVIDIA GPU (doc/gpu.md), in about 5 minutes:
#   1. configure (--with-cuda, nvcc for the GPU's architecture) and build in $SURGE_BUILD
#      (default: _build-gpu of the source tree);
#   2. the GPU tests, tests/gpu/*.gpu: every op against ref, the bf16 tensor-core attention against
#      ref at the bf16 tolerance, 20 steps of every zoo model cuda =
#      cpu within 1e-4 (the batch-norm models against ref), data parallelism on 2 ranks sharing the GPU = 1 rank (and sharded, the
#      distributed optimizer's collectives on device buffers), a background beside a
#      foreground (its loss falls, the foreground's parameters bitwise unchanged), training with
#      cuBLASLt's epilogues = without them within 1e-4;
#   3. the GPU benchmarks: the backend's GEMM against cuBLAS alone on the models' shapes (fp32 and
#      bf16); the fused attention forward and backward under each attention_kernels setting; GPT training throughput (tokens/s), model FLOP utilisation (two counts) and device
#      memory of the larger GPT deck (inputs/gpt-3d.deck) and of GPT-2 124M's shape
#      (inputs/gpt2-124m.deck on generated token shards, the largest batch that fits), data
#      parallel on 1 rank, in bf16 and fp32 (and gpt-3d in bf16 with backend.epilogues = off, and
#      with backend.attention_kernels = wmma and wmma32, beside the defaults); the kernels' GPU
#      time; the foreground's slowdown
#      with a background beside it on the GPU, and the background's throughput, against the
#      foreground alone, with the background as a process of its own and in the foreground's
#      process ([multiplex] placement = thread), there also with its pieces recorded as CUDA
#      graphs ([multiplex] graphs = on), for the burst pair also with the foreground's waits
#      spinning (poll_us = 0); and mux.gpu's burst foreground alone as a --foreground with no
#      partner, with its state timing and without (slowdown_feedback off), and spinning.
# DEVICE_TESTS names the tests to run (default all: ops attention zoo dp mux gen epilogues);
# DEVICE_BENCH=0 runs no benchmark, DEVICE_BENCH=mux only the multiplexing ones (a short recheck).
# Writes the runs' files under OUTDIR, and the report under DEVICE_REPORT (default OUTDIR): summary.md
# (the table, written again after each part, so a check stopped early leaves what it reached), logs/
# (every test's TAP output, every run's output) and *.txt (the benchmarks' tables). Exit 0 when every
# test passed, 1 when one failed, 2 on a bad argument, 77 (after one line saying so) where there is no
# GPU.
set -u
[ $# = 1 ] || { echo "usage: tests/gpu/device-check.sh OUTDIR" >&2; exit 2; }
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1" "${DEVICE_REPORT:-$1}/logs" || exit 2
out=$(cd "$1" && pwd)
report=$(cd "${DEVICE_REPORT:-$1}" && pwd)
logs=$report/logs
. "$src/tests/gpu/limited.sh"
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >"$logs/nvidia-smi.txt" 2>&1 ||
  ! grep -q "^GPU " "$logs/nvidia-smi.txt"; then
  echo "device-check: no NVIDIA GPU on this machine (nvidia-smi -L lists none): nothing checked, the GPU figures stay open"
  exit 77
fi
nvidia-smi >>"$logs/nvidia-smi.txt" 2>&1
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
arch="-arch=sm_${cc:-90}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpiexec=${MPIEXEC:-mpiexec}
jobs=$(nproc 2>/dev/null || echo 4)

# ---- 1. build (SURGE_PREBUILT=1: $SURGE_BUILD holds a build made elsewhere, tests/gpu/device-run.sh)
build=${SURGE_BUILD:-$src/_build-gpu}
if [ "${SURGE_PREBUILT:-0}" = 1 ]; then
  [ -x "$build/surge-train" ] || { echo "device-check: SURGE_PREBUILT=1 but $build has no surge-train"; exit 2; }
  echo "device-check: using the build in $build"
else
  echo "device-check: building with CUDA ($arch) in $build"
  {
    { [ -x "$src/configure" ] || (cd "$src" && ./bootstrap); } &&
      mkdir -p "$build" && cd "$build" &&
      { [ -f Makefile ] || "$src/configure" --with-cuda NVCC_ARCH="$arch"; } &&
      make -j"$jobs" && make -j"$jobs" check TESTS= && make -j"$jobs" bench/bench_gpu_gemm bench/bench_gpu_attention tests/make_plan &&
      { sh "$src/tests/gpu/build-kernel-times.sh" "$build" || echo "no kernel-time profiles"; }
  } >"$logs/build.txt" 2>&1
  build_rc=$?
  if [ $build_rc != 0 ]; then
    tail -n 30 "$logs/build.txt"
    echo "device-check: the build with CUDA failed (exit $build_rc; $logs/build.txt)"
    exit 1
  fi
fi
cd "$build" || exit 1
probe=$(./tests/gpu/gpu_probe bf16)
if [ $? != 0 ]; then
  echo "device-check: nvidia-smi lists a GPU but the cuda backend cannot open it: $probe"
  exit 77
fi
peak_bf16=${probe%% *}
gpu=${probe#* }
peak_fp32=$(./tests/gpu/gpu_probe fp32 | cut -d' ' -f1)
echo "device-check: $gpu, built in $(elapsed) s"

# ---- the summary: summary.md from what has been reached (written after each part, so that a check
# stopped early leaves its rows so far; a part not reached says so)
# gemm_range FILE: the backend's TFLOP/s over cuBLAS's, lowest and highest over the shapes
gemm_range() {
  [ -f "$1" ] || { printf "not reached"; return; }
  awk '/^gpt|^mlp/ { r = $(NF); if (n == 0 || r < lo) lo = r; if (n == 0 || r > hi) hi = r; n++ }
       END { if (n) printf "%.2f-%.2f (%d shapes)", lo, hi, n; else printf "not measured" }' "$1"
}
gemm_best() {
  [ -f "$1" ] || { printf "not reached"; return; }
  awk '/^gpt-3d fc1 fwd/ { v = sprintf("%s TFLOP/s (cuBLAS %s)", $(NF-2), $(NF-1)) }
       END { printf "%s", v == "" ? "not measured" : v }' "$1"
}
# att_row SHAPE: each bf16 setting's forward + backward TFLOP/s at SHAPE, and auto's gain over wmma32
att_row() {
  [ -f "$report/attention.txt" ] || { printf "not reached"; return; }
  awk -v s="$1" '$1 == s && $2 == "bf16" { v = v sprintf("%s%s %s TF/s", (v == "" ? "" : ", "), $3, $(NF-2)); if ($3 == "auto") g = $NF }
       END { if (v == "") printf "not measured"; else printf "%s; auto %.2fx wmma32", v, g }' "$report/attention.txt"
}
summary() {
  {
    echo "# device-check on $gpu ($(date -u '+%Y-%m-%d %H:%M UTC'), $(elapsed) s)"
    echo
    echo "commit ${SURGE_COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}, $arch"
    echo
    echo "| test | results | verdict |"
    echo "|---|---|---|"
    printf '%s' "$test_rows"
    echo
    echo "| measure | value | target |"
    echo "|---|---|---|"
    [ "$bench" != mux ] && {
    echo "| GEMM backend/cuBLAS fp32 | $(gemm_range "$report/gemm-fp32.txt") | ~1 |"
    echo "| GEMM backend/cuBLAS bf16 | $(gemm_range "$report/gemm-bf16.txt") | ~1 |"
    echo "| GEMM gpt-3d fc1 fwd fp32 | $(gemm_best "$report/gemm-fp32.txt") | |"
    echo "| GEMM gpt-3d fc1 fwd bf16 | $(gemm_best "$report/gemm-bf16.txt") | |"
    echo "| attention fwd + bwd, gpt-3d (8 heads of 64, T 256) | $(att_row gpt-3d) | |"
    echo "| attention fwd + bwd, GPT-2 124M (12 heads of 64, T 1024) | $(att_row gpt2-124m) | |"
    echo "| attention fwd + bwd, hs 128, T 1024 | $(att_row hs128) | |"
    echo "| GPT gpt-3d.deck bf16 (1 rank) | $gpt_bf16 | MFU >= 25% |"
    echo "| GPT gpt-3d.deck bf16, backend.epilogues = off (1 rank) | $gpt_bf16_off | (the row above's gain) |"
    echo "| GPT gpt-3d.deck bf16, backend.attention_kernels = wmma (1 rank) | $gpt_bf16_wmma | (the register kernels' gain) |"
    echo "| GPT gpt-3d.deck bf16, backend.attention_kernels = wmma32 (1 rank) | $gpt_bf16_wmma32 | (the 64-row tiles' gain) |"
    echo "| GPT gpt-3d.deck fp32 (1 rank) | $gpt_fp32 | |"
    echo "| GPT-2 124M's shape bf16 (1 rank) | $gpt2_bf16 | MFU >= 40%; device memory <= 1.2 x state + activations |"
    echo "| GPT-2 124M's shape fp32 (1 rank) | $gpt2_fp32 | |"
    }
    echo "| gpt-fortunes foreground (1 rank) + mlp background | $mux_gpt | slowdown <= 1.10 |"
    echo "| the gpt pair in-process (placement = thread, the background's own lowest-priority stream) | $mux_gpt_thread | slowdown <= 1.05 |"
    echo "| the gpt pair in-process, the background's pieces as CUDA graphs ([multiplex] graphs = on) | $mux_gpt_graphs | slowdown <= 1.05 |"
    echo "| vgg burst foreground (2 ranks, one idle half the step) + 2 mlp backgrounds (tests/gpu/mux.gpu) | $mux_burst | slowdown <= 1.10 |"
    echo "| the burst pair in-process (tests/gpu/mux.gpu, placement = thread) | $mux_burst_thread | slowdown <= 1.10 |"
    echo "| the burst pair in-process, pieces as CUDA graphs (tests/gpu/mux.gpu, graphs = on) | $mux_burst_graphs | slowdown <= 1.10 |"
    echo "| the burst pair in-process, graphs, the foreground's waits spinning (mux.gpu, poll_us = 0) | $mux_burst_spin | slowdown <= 1.10 |"
    echo "| the burst foreground alone as a --foreground, no partner (state timing by device marks; by the host's clock; waits inside MPI) | $mux_burst_alone | (the pairs' share of it) |"
    echo "| the gpt pair under MPS | $mux_gpt_mps | slowdown <= 1.10 |"
    echo "| tests/gpu/mux.gpu under MPS | $mux_burst_mps | slowdown <= 1.10 |"
    echo
    echo "Logs: logs/ (TAP of each test, each run's output); GEMM tables: gemm-fp32.txt, gemm-bf16.txt; attention: attention.txt."
  } >"$report/summary.md"
}
for v in gpt_bf16 gpt_bf16_off gpt_bf16_wmma gpt_bf16_wmma32 gpt_fp32 gpt2_bf16 gpt2_fp32 mux_gpt mux_gpt_thread \
  mux_gpt_graphs mux_burst mux_burst_thread mux_burst_graphs mux_burst_spin mux_burst_alone mux_gpt_mps mux_burst_mps; do
  eval "$v='not reached'"
done
bench=${DEVICE_BENCH:-1}
test_rows=""

# ---- 2. the GPU tests
export SURGE_TOP_SRCDIR="$src" SURGE_TOP_BUILDDIR="$build" MPIEXEC="$mpiexec"
. "$src/tests/tap.sh" # h5vals, h5attr
failed=0
limit=${DEVICE_TEST_LIMIT:-240} # seconds per GPU test; limited ends everything the test started
for t in ${DEVICE_TESTS:-ops attention zoo dp mux gen epilogues}; do
  limited "$limit" sh "$src/tests/gpu/$t.gpu" >"$logs/$t.tap" 2>&1
  rc=$?
  n_ok=$(grep -c "^ok " "$logs/$t.tap")
  n_bad=$(grep -c "^not ok " "$logs/$t.tap")
  if [ $rc = 77 ] || grep -q "^1\.\.0 # SKIP" "$logs/$t.tap"; then
    verdict="SKIP: $(sed -n 's/^1\.\.0 # SKIP //p' "$logs/$t.tap")"
  elif [ "$n_bad" = 0 ] && [ $rc = 0 ] && grep -q "^1\.\.[1-9]" "$logs/$t.tap"; then
    verdict="PASS"
  else
    verdict="FAIL (exit $rc)"
    failed=1
  fi
  test_rows="$test_rows| tests/gpu/$t.gpu | $n_ok ok, $n_bad not ok | $verdict |
"
  echo "device-check: tests/gpu/$t.gpu: $verdict ($n_ok ok, $n_bad not ok; $(elapsed) s)"
done
summary

# ---- 3. benchmarks (DEVICE_BENCH=0: none; mux: only the multiplexing pairs)
if [ "$bench" = 0 ]; then
  echo "device-check: benchmarks not asked for (DEVICE_BENCH=0)"
  [ $failed = 0 ] && exit 0
  exit 1
fi
if [ "$bench" != mux ]; then
timeout 60 ./bench/bench_gpu_gemm fp32 >"$report/gemm-fp32.txt" 2>&1
timeout 60 ./bench/bench_gpu_gemm bf16 >"$report/gemm-bf16.txt" 2>&1
echo "device-check: GEMM benchmarks done ($(elapsed) s)"
# The fused attention alone, forward and backward, under each attention_kernels setting
# (bench/bench_gpu_attention: ms and TFLOP/s a call, fwd + bwd against wmma32's).
timeout 90 ./bench/bench_gpu_attention >"$report/attention.txt" 2>&1
echo "device-check: attention benchmark done ($(elapsed) s)"
summary

# gpt_run TAG DECK PRECISION [-D KEY=VALUE ...]: DECK data parallel on 1 rank, 30 steps; prints
# tokens/s, the median step time after the first 5, and model FLOP utilisation counted two ways:
# 3 x the forward FLOPs per sample the run prints (its graph's count: attention over the whole
# T x T) and llm.c's (6 N + 6 L C T) per token (gpt2_estimate_mfu: N parameters, L layers, width
# C, context T), with the run's cuBLASLt epilogue setting (backend.epilogues) and how many of its
# linear forwards took them; then, on the same line, the GPU memory line the run prints and its
# waits for the device a step (1 rank: the data's uploads and one read of the loss and norm). Exit 1
# when the run failed.
gpt_run() {
  tag=$1 deck=$2 prec=$3
  shift 3
  d="$out/gpt-$tag"
  timeout 180 "$mpiexec" -n 1 ./surge-train "$deck" -D parallel.mode=dp -D backend.name=cuda \
    -D backend.precision="$prec" -D run.steps=30 -D run.eval_every=0 -D run.print_every=10 -D checkpoint.every=0 \
    -D run.overwrite=true -D "run.out_dir=$d" "$@" >"$logs/gpt-$tag.txt" 2>&1 || { echo "failed"; return 1; }
  params=$(sed -n 's/^model gpt: \([0-9]*\) parameters, .*/\1/p' "$logs/gpt-$tag.txt")
  mflop=$(sed -n 's/^model gpt: [0-9]* parameters, \([0-9.]*\) MFLOP forward per sample.*/\1/p' "$logs/gpt-$tag.txt")
  key() { sed -n "s/^$1 = //p" "$logs/gpt-$tag.txt" | head -n 1; }
  peak=$peak_fp32
  [ "$prec" = bf16 ] && peak=$peak_bf16
  epi=$(sed -n 's/^cuBLASLt epilogues \([a-z]*\): bias in \([0-9]*\) of \([0-9]*\) .*, bias + GELU in \([0-9]*\) of \([0-9]*\) .*/\1 (bias \2\/\3, bias + GELU \4\/\5 fused)/p' \
    "$logs/gpt-$tag.txt" | head -n 1)
  line=$(h5vals "$d/log.h5" /metrics/step_time | awk 'NR > 5' | sort -g |
    awk -v mf="$mflop" -v pk="$peak" -v b="$(key global_batch)" -v T="$(key gpt_context)" -v N="${params:-0}" \
      -v L="$(key gpt_layers)" -v C="$(key gpt_width)" -v epi="${epi:-not reported}" '
    { v[++n] = $1 }
    END {
      if (n == 0 || mf == "" || b == 0 || pk <= 0) { print "failed"; exit 1 }
      t = v[int((n + 1) / 2)]; sps = b / t
      mfu = 100 * 3 * mf * 1e6 * sps / pk; llmc = 100 * (6 * N + 6 * L * C * T) * sps * T / pk
      printf "batch %d x %d, %.0f tokens/s, step %.1f ms, MFU %.1f%% (3 x %.0f MFLOP/sample forward) or %.1f%% (llm.c 6N + 6LCT, N = %d) of %.0f TFLOP/s, epilogues %s\n",
        b, T, sps * T, t * 1e3, mfu, mf, llmc, N, pk * 1e-12, epi
    }') || { echo "failed"; return 1; }
  echo "$line; $(grep -a "^device memory" "$logs/gpt-$tag.txt" | head -n 1); $(grep -a "^waits for the device" \
    "$logs/gpt-$tag.txt" | head -n 1)"
}
# gpt2_shards: llm.c token shards of GPT-2's vocabulary (a seeded text, tests/write_shard.py) for
# inputs/gpt2-124m.deck at its full shape; prints the -D options that read them.
gpt2_shards() {
  mkdir -p "$out/gpt2-shards"
  python3 "$src/tests/write_shard.py" "$out/gpt2-shards/gpt2_train_000000.bin" 4000000 50257 1 &&
    python3 "$src/tests/write_shard.py" "$out/gpt2-shards/gpt2_val_000000.bin" 400000 50257 2 || return 1
  echo "-D data.path=$out/gpt2-shards/gpt2_train_*.bin -D data.val_path=$out/gpt2-shards/gpt2_val_*.bin -D data.tokenizer= -D data.vocab_size=50257"
}
# gpt2_run PRECISION: inputs/gpt2-124m.deck (12 x 768, 12 heads, context 1024) at the largest
# batch of 64, 32, 16, 8 that runs (a batch that does not fit ends its run with the out-of-memory
# error; the next is tried), 15 steps (the median of the last 10); prints gpt_run's line.
gpt2_run() {
  for b in ${GPT2_BATCHES:-64 32 16 8}; do
    # shellcheck disable=SC2086
    r=$(gpt_run "124m-$1-b$b" "$src/inputs/gpt2-124m.deck" "$1" $gpt2_data -D train.global_batch="$b" \
      -D run.steps=15 -D data.test_samples=32) &&
      { echo "$r"; return; }
    grep -q "out of device memory" "$logs/gpt-124m-$1-b$b.txt" || { echo "failed (batch $b; logs/gpt-124m-$1-b$b.txt)"; return; }
  done
  echo "failed: no batch fits"
}
gpt_bf16=$(gpt_run 3d-bf16 "$src/inputs/gpt-3d.deck" bf16)
gpt_bf16_off=$(gpt_run 3d-bf16-off "$src/inputs/gpt-3d.deck" bf16 -D backend.epilogues=off)
gpt_bf16_wmma=$(gpt_run 3d-bf16-wmma "$src/inputs/gpt-3d.deck" bf16 -D backend.attention_kernels=wmma)
gpt_bf16_wmma32=$(gpt_run 3d-bf16-wmma32 "$src/inputs/gpt-3d.deck" bf16 -D backend.attention_kernels=wmma32)
gpt_fp32=$(gpt_run 3d-fp32 "$src/inputs/gpt-3d.deck" fp32)
echo "device-check: GPT throughput, gpt-3d.deck: bf16 $gpt_bf16; bf16 without epilogues $gpt_bf16_off; bf16 with the WMMA attention $gpt_bf16_wmma, in 32-row tiles $gpt_bf16_wmma32; fp32 $gpt_fp32 ($(elapsed) s)"
gpt2_bf16="no token shards (python3 missing)"
gpt2_fp32=$gpt2_bf16
if gpt2_data=$(gpt2_shards); then
  gpt2_bf16=$(gpt2_run bf16)
  gpt2_fp32=$(gpt2_run fp32)
fi
echo "device-check: GPT throughput, GPT-2 124M's shape: bf16 $gpt2_bf16; fp32 $gpt2_fp32 ($(elapsed) s)"
summary
# Where the GPU time of 10 steps goes, kernel by kernel (tests/gpu/kernel_times.c, when it was built):
# one table per process that opened CUDA (Open MPI's launcher may, to look at the GPU), the rank's is
# the largest. Then the same deck at 4x the batch, where fixed costs per kernel weigh less, and in
# bf16 with the WMMA attention kernels in 64- and in 32-row tiles (each kernel's time against auto's).
for p in bf16 fp32 bf16-b128 bf16-wmma bf16-wmma32; do
  [ -f tests/gpu/libkernel_times.so ] || break
  extra=""
  [ "$p" = bf16-b128 ] && extra="-D train.global_batch=128"
  [ "$p" = bf16-wmma ] && extra="-D backend.attention_kernels=wmma"
  [ "$p" = bf16-wmma32 ] && extra="-D backend.attention_kernels=wmma32"
  CUDA_INJECTION64_PATH="$build/tests/gpu/libkernel_times.so" KERNEL_TIMES="$logs/kernels-gpt-$p.%p.txt" \
    timeout 60 "$mpiexec" -n 1 ./surge-train "$src/inputs/gpt-3d.deck" -D parallel.mode=dp -D backend.name=cuda \
    -D backend.precision=${p%-*} -D run.steps=10 -D run.eval_every=0 -D run.print_every=10 -D checkpoint.every=0 \
    $extra -D run.overwrite=true -D "run.out_dir=$out/kernels-$p" >"$logs/kernels-gpt-$p.out" 2>&1
  f=$(ls -S "$logs"/kernels-gpt-$p.*.txt 2>/dev/null | head -n 1)
  echo "device-check: GPU time of gpt-3d.deck in $p, 10 steps ($(grep -a "^done:" "$logs/kernels-gpt-$p.out")):"
  [ -n "$f" ] && head -n 16 "$f" && tail -n 1 "$f"
  # the fused attention's kernels wherever they rank (k_attention_*<0>: fp32, <1>: bf16 WMMA,
  # k_attention_*_rf<HS>: bf16 with the tiles in registers)
  if [ -n "$f" ]; then
    if grep -q "k_attention_" "$f"; then grep "k_attention_" "$f" | sed 's/^/attention: /'; else echo "attention: no k_attention_ kernel ran"; fi
  fi
done
fi # DEVICE_BENCH != mux
# The foreground (gpt-fortunes.deck, 1 rank, 400 steps) alone, then with an mlp background beside it
# on the same GPU (one mpiexec), its slowdown against the solo log ([multiplex] baseline). A
# 1-rank data-parallel foreground is always computing, and the gate opens only while its partner
# waits or is inactive (doc/multiplexing.md), so its background gets about one step through
# (14 pieces on an H200, 2026-12-04, at 40 and at 400 steps): this pair checks that a busy
# foreground is not slowed; mux.gpu's burst pair, that idle time is filled. 400 steps (about 1.5 s
# on an H200) keep start-up out of the slowdown.
FG="./surge-train $src/inputs/gpt-fortunes.deck -D backend.name=cuda -D run.steps=400 -D run.eval_every=0
  -D run.print_every=100 -D checkpoint.every=0 -D run.overwrite=true"
BGKEYS="-D backend.name=cuda -D run.steps=100000 -D run.eval_every=0 -D run.print_every=1000 -D checkpoint.every=0
  -D run.overwrite=true"
BG="./surge-train $src/inputs/mlp-fmnist.deck $BGKEYS"
# the same background in the foreground's process ([multiplex] placement = thread)
IN="--background-deck $src/inputs/mlp-fmnist.deck $(echo $BGKEYS | sed 's/-D /-D bg:/g')"
# mux_row: from a pair's output, "slowdown S, foreground F samples/s, background B samples/s" (B each
# background's, in the order of their lines: the burst pair has one beside each rank); the jobs'
# labels ("[foreground] ", core/say.h) taken off first
mux_row() {
  sed 's/^\[[^]]*\] //' | awk '/^multiplex \(foreground/ && match($0, /: foreground [0-9.]+/) { fg = substr($0, RSTART + 13, RLENGTH - 13) }
       /^multiplex \(background/ && match($0, /background [0-9.]+ samples/) {
         bg = bg (bg == "" ? "" : " + ") substr($0, RSTART + 11, RLENGTH - 19) }
       /^foreground slowdown [0-9.]+ against/ { sd = $3 }
       END { if (fg == "") print "failed"; else printf "slowdown %s, foreground %s samples/s, background %s samples/s\n", sd, fg, bg }'
}
# mux_pair TAG: the foreground alone, then beside the background; prints mux_row's line
mux_pair() {
  timeout 90 "$mpiexec" -n 1 $FG -D "run.out_dir=$out/mux-solo-$1" >"$logs/mux-solo-$1.txt" 2>&1 &&
    timeout 90 "$mpiexec" -n 1 $FG -D "run.out_dir=$out/mux-fg-$1" -D "multiplex.baseline=$out/mux-solo-$1/log.h5" \
      : -n 1 $BG --background -D "run.out_dir=$out/mux-bg-$1" >"$logs/mux-pair-$1.txt" 2>&1 &&
    mux_row <"$logs/mux-pair-$1.txt" && return
  echo "failed"
}
# mux_thread SOLO TAG [ARGS]: after mux_pair SOLO, the foreground with the background in its process
# (the background's extra ARGS); mux_row's line
mux_thread() {
  mt_solo=$1 mt_tag=$2
  shift 2
  timeout 90 "$mpiexec" -n 1 $FG -D multiplex.placement=thread -D "run.out_dir=$out/mux-fgt-$mt_tag" \
    -D "multiplex.baseline=$out/mux-solo-$mt_solo/log.h5" $IN -D "bg:run.out_dir=$out/mux-bgt-$mt_tag" "$@" \
    >"$logs/mux-thread-$mt_tag.txt" 2>&1 && mux_row <"$logs/mux-thread-$mt_tag.txt" && return
  echo "failed"
}
# mps_start, mps_stop: NVIDIA's multi-process service for this check's processes, where the driver
# has it: kernels of different processes then run side by side (and the background asks for MPS
# client priority below normal) instead of taking turns in time slices.
mps_start() {
  PATH=$PATH:/usr/local/nvidia/bin command -v nvidia-cuda-mps-control >/dev/null || return 1
  mkdir -p "$out/mps/pipe" "$out/mps/log"
  export CUDA_MPS_PIPE_DIRECTORY="$out/mps/pipe" CUDA_MPS_LOG_DIRECTORY="$out/mps/log"
  PATH=$PATH:/usr/local/nvidia/bin nvidia-cuda-mps-control -d >"$logs/mps.txt" 2>&1
}
mps_stop() {
  echo quit | PATH=$PATH:/usr/local/nvidia/bin nvidia-cuda-mps-control >>"$logs/mps.txt" 2>&1
  cat "$out/mps/log/control.log" >>"$logs/mps.txt" 2>/dev/null
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
}
mux_gpt=$(mux_pair plain)
mux_gpt_thread=$(mux_thread plain plain)
# with the background's pieces recorded as CUDA graphs ([multiplex] graphs = on), and how many ran
mux_gpt_graphs="$(mux_thread plain graphs -D bg:multiplex.graphs=on); $(sed -n 's/^\[[^]]*\] pieces recorded as CUDA graphs: //p' \
  "$logs/mux-thread-graphs.txt" 2>/dev/null)"
# tests/gpu/mux.gpu's diagnostics: the two-process pair's lines, then the in-process pairs'
mux_burst=$(sed -n 's/^# //p' "$logs/mux.tap" 2>/dev/null | mux_row)
mux_burst_thread=$(sed -n 's/^# in-process //p' "$logs/mux.tap" 2>/dev/null | mux_row)
mux_burst_graphs=$(sed -n 's/^# in-process (pieces as CUDA graphs) //p' "$logs/mux.tap" 2>/dev/null | mux_row)
mux_burst_spin=$(sed -n 's/^# in-process (graphs, waits spinning) //p' "$logs/mux.tap" 2>/dev/null | mux_row)
# and the burst foreground alone as a --foreground with no partner (its waits then never sleep): the
# cost of its state timing by device marks (feedback device), by the host's clock (feedback off), and
# with its waits inside MPI (waits spinning)
mux_alone() {
  v=$(sed -n "s/^# alone as a foreground, $1: foreground slowdown \([0-9.]*\) .*/slowdown \1/p" "$logs/mux.tap" 2>/dev/null)
  echo "${v:-failed}"
}
mux_burst_alone="$(mux_alone "feedback device") (feedback device), $(mux_alone "feedback off") (feedback off), \
$(mux_alone "waits spinning") (waits spinning)"
summary
if mps_start; then
  mux_gpt_mps=$(mux_pair mps)
  if [ "$mux_burst" != failed ]; then # the two-process pair again (MUX_PAIR_ONLY), where mux.gpu ran it
    MUX_PAIR_ONLY=1 limited "$limit" sh "$src/tests/gpu/mux.gpu" >"$logs/mux-mps.tap" 2>&1
    mux_burst_mps="$(sed -n 's/^# //p' "$logs/mux-mps.tap" | mux_row) ($(grep -c "^ok " "$logs/mux-mps.tap") ok, $(grep -c "^not ok " "$logs/mux-mps.tap") not ok)"
  else
    mux_burst_mps="not run (mux.gpu's two-process pair did not run or failed)"
  fi
  mps_stop
else
  mux_gpt_mps="no MPS on this machine"
  mux_burst_mps=$mux_gpt_mps
fi
echo "device-check: multiplexing: gpt $mux_gpt, in-process $mux_gpt_thread, as graphs $mux_gpt_graphs; burst $mux_burst, in-process $mux_burst_thread, as graphs $mux_burst_graphs, graphs with spinning waits $mux_burst_spin, alone as a foreground $mux_burst_alone; under MPS: gpt $mux_gpt_mps; burst $mux_burst_mps ($(elapsed) s)"

summary
cat "$report/summary.md"
[ $failed = 0 ] && echo "device-check: all GPU tests passed ($(elapsed) s)" && exit 0
echo "device-check: some GPU tests failed (logs in $logs)"
exit 1
