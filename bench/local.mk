# Benchmarks (make bench): ratios against baselines measured in the same run.
bench_programs += bench/bench_models
bench_bench_models_SOURCES = bench/bench_models.c
bench_bench_models_LDADD = $(SURGE_LIBS)
