#!/bin/sh
# make bench: every benchmark, each measured as ratios against a baseline run in the same
# invocation. Run from the build directory (make bench does). Output: tables on stdout.
set -eu
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
mpiexec=${MPIEXEC:-mpiexec}
only=${1:-all}
want() { [ "$only" = all ] || [ "$only" = "$1" ]; }

if want models; then
  echo "== engine: zoo models at 1 rank x 1 thread against a large square SGEMM, and data parallelism on 2 ranks (bench/bench_models.sh)"
  MPIEXEC="$mpiexec" sh "$src/bench/bench_models.sh"
fi
if want allreduce && [ -x bench/bench_allreduce ]; then
  for np in 2 4; do
    echo "== comm layer allreduce against raw MPI_Allreduce, $np ranks (bench/bench_allreduce)"
    "$mpiexec" -n "$np" ./bench/bench_allreduce
  done
fi
if want dp && [ -f "$src/bench/bench_dp.sh" ]; then
  echo "== data-parallel throughput on 1 and 2 ranks (bench/bench_dp.sh)"
  SURGE_TRAIN=./surge-train MPIEXEC="$mpiexec" sh "$src/bench/bench_dp.sh"
fi
if want layout && [ -f "$src/bench/bench_layout.sh" ]; then
  echo "== layouts: memory per rank, overlapped gradient sync, throughput (bench/bench_layout.sh)"
  SURGE_TRAIN=./surge-train MPIEXEC="$mpiexec" sh "$src/bench/bench_layout.sh"
fi
if want burst && [ -f "$src/bench/bench_burst.sh" ]; then
  echo "== burst planner fidelity: predicted against measured step time, 2 and 4 ranks (bench/bench_burst.sh)"
  SURGE_TRAIN=./surge-train MPIEXEC="$mpiexec" SURGE_BUILD=. sh "$src/bench/bench_burst.sh"
fi
if want multiplex && [ -f "$src/bench/bench_multiplex.sh" ]; then
  echo "== multiplexing: a burst foreground with a background per rank against it alone and data parallelism (bench/bench_multiplex.sh)"
  SURGE_TRAIN=./surge-train MPIEXEC="$mpiexec" SURGE_BUILD=. sh "$src/bench/bench_multiplex.sh"
fi
if want multiplex3d && [ -f "$src/bench/bench_multiplex_3d.sh" ]; then
  echo "== multiplexing in a 3d foreground's bubbles on the emulated cluster: slowdown, idle time used (bench/bench_multiplex_3d.sh)"
  SURGE_TRAIN=./surge-train MPIEXEC="$mpiexec" sh "$src/bench/bench_multiplex_3d.sh"
fi
if want compress && [ -f "$src/bench/bench_compress.sh" ]; then
  echo "== Optimus-CC compression on tp 2 x pp 2 x dp 2: traffic against the formulas, quality against the exact twin, speed on the emulated cluster (bench/bench_compress.sh)"
  SURGE_TRAIN=./surge-train MPIEXEC="$mpiexec" sh "$src/bench/bench_compress.sh"
fi
if want cluster && [ -f "$src/bench/bench_cluster.sh" ]; then
  echo "== the emulated cluster: links per rate, burst planner fidelity and multiplexing on 2 nodes x 2 ranks (bench/bench_cluster.sh)"
  SURGE_TRAIN=./surge-train MPIEXEC="$mpiexec" SURGE_BUILD=. sh "$src/bench/bench_cluster.sh"
fi
if want sim && [ -f "$src/bench/bench_sim.sh" ]; then
  echo "== surge-sim against real runs: burst plans and backgrounds on 2 ranks (bench/bench_sim.sh)"
  SURGE_TRAIN=./surge-train MPIEXEC="$mpiexec" SURGE_BUILD=. sh "$src/bench/bench_sim.sh"
fi
if want 3d && [ -f "$src/bench/bench_3d.sh" ]; then
  echo "== 3D parallelism: bubble against theory, activation memory 1F1B against GPipe, throughput against data parallelism (bench/bench_3d.sh)"
  SURGE_TRAIN=./surge-train MPIEXEC="$mpiexec" sh "$src/bench/bench_3d.sh"
fi
if want recompute && [ -f "$src/bench/bench_recompute.sh" ]; then
  echo "== activation recomputation: step time and memory of block and attention against none, 1 rank and 3d (bench/bench_recompute.sh)"
  SURGE_TRAIN=./surge-train MPIEXEC="$mpiexec" sh "$src/bench/bench_recompute.sh"
fi
if want memory && [ -f "$src/bench/bench_memory.sh" ]; then
  echo "== memory at scale: peak RSS per rank of a 124M gpt on 1-8 dp ranks against its state, sharded optimizer and recompute; the sharded optimizer's step time on one node and 2 emulated nodes (bench/bench_memory.sh)"
  SURGE_TRAIN=./surge-train MPIEXEC="$mpiexec" sh "$src/bench/bench_memory.sh"
fi
if want tokens && [ -f "$src/bench/bench_tokens.sh" ]; then
  echo "== tokenized text: surge-tokenize against Hugging Face tokenizers, gpt2-124m's data phase (bench/bench_tokens.sh)"
  MPIEXEC="$mpiexec" sh "$src/bench/bench_tokens.sh"
fi
if want simd && [ -f "$src/bench/bench_simd.sh" ]; then
  echo "== the cpu kernels' widths (avx2, avx512) against simd = none, the im2col + OpenBLAS fallback, 1 rank (bench/bench_simd.sh)"
  MPIEXEC="$mpiexec" sh "$src/bench/bench_simd.sh"
fi
if want bf16 && [ -f "$src/bench/bench_bf16.sh" ]; then
  echo "== the cpu backend's bf16 products against fp32, 1 rank (bench/bench_bf16.sh)"
  MPIEXEC="$mpiexec" sh "$src/bench/bench_bf16.sh"
fi
if want gemm && [ -x bench/bench_gemm ]; then
  echo "== the cpu backend's own SGEMM against OpenBLAS at gpt's shapes, 1 thread (bench/bench_gemm)"
  ./bench/bench_gemm
fi
if want torch && [ -f "$src/bench/bench_torch.sh" ]; then
  echo "== Surge against PyTorch's CPU training of mlp, vgg-mini and gpt: 1 rank vs 1 thread, 2 ranks vs 2 threads, per kernel width (bench/bench_torch.sh)"
  MPIEXEC="$mpiexec" sh "$src/bench/bench_torch.sh"
fi
if want sample && [ -f "$src/bench/bench_sample.sh" ]; then
  echo "== generation: surge-sample with the key/value cache against recomputing the context, 1 core (bench/bench_sample.sh)"
  sh "$src/bench/bench_sample.sh"
fi
if want checkpoint && [ -x bench/bench_checkpoint ]; then
  echo "== checkpoint write/read against plain sequential I/O, 2 ranks (bench/bench_checkpoint)"
  "$mpiexec" -n 2 ./bench/bench_checkpoint
fi
if want planner && [ -x bench/bench_planner ]; then
  echo "== burst planner run time (bench/bench_planner)"
  ./bench/bench_planner
fi
