# Benchmarks (make bench): ratios against baselines measured in the same run.
EXTRA_DIST += bench/lib.sh bench/bench_models.sh bench/bench_dp.sh bench/bench_layout.sh bench/bench_burst.sh \
  bench/bench_multiplex.sh bench/bench_multiplex_3d.sh bench/bench_sim.sh bench/bench_3d.sh bench/bench_compress.sh \
  bench/bench_tokens.sh bench/tok_reference.py bench/bench_torch.sh bench/torch_models.py \
  bench/bench_simd.sh bench/bench_sample.sh bench/bench_bf16.sh
EXTRA_DIST += bench/bench_recompute.sh bench/bench_memory.sh
bench_programs += bench/bench_models
bench_bench_models_SOURCES = bench/bench_models.c
bench_bench_models_LDADD = $(SURGE_LIBS)
bench_programs += bench/bench_gemm
bench_bench_gemm_SOURCES = bench/bench_gemm.c
bench_bench_gemm_LDADD = $(SURGE_LIBS)
bench_programs += bench/bench_allreduce
bench_bench_allreduce_SOURCES = bench/bench_allreduce.c
bench_bench_allreduce_LDADD = $(SURGE_LIBS)
bench_programs += bench/bench_checkpoint
bench_bench_checkpoint_SOURCES = bench/bench_checkpoint.c
bench_bench_checkpoint_LDADD = $(SURGE_LIBS)
bench_programs += bench/bench_planner
bench_bench_planner_SOURCES = bench/bench_planner.c
bench_bench_planner_LDADD = $(SURGE_LIBS)
# The emulated cluster (doc/cluster.md): make bench BENCH=cluster; tests/p2p_bw measures its links.
EXTRA_DIST += bench/bench_cluster.sh
bench: tests/p2p_bw$(EXEEXT)
# The cuda backend's GEMM against cuBLAS alone (tests/gpu/device-check.sh runs it on a GPU).
bench_bench_gpu_gemm_SOURCES = bench/bench_gpu_gemm.c
bench_bench_gpu_gemm_LDADD = $(SURGE_LIBS) $(CUDA_BLAS_LIBS)
# The cuda backend's fused attention under each attention_kernels setting (device-check.sh too).
bench_bench_gpu_attention_SOURCES = bench/bench_gpu_attention.c
bench_bench_gpu_attention_LDADD = $(SURGE_LIBS)
if HAVE_CUDA
bench_programs += bench/bench_gpu_gemm bench/bench_gpu_attention
endif
