# Cross-area tests: whole models against PyTorch references, training runs, bad input.
dist_check_SCRIPTS += tests/test_bad_input.sh tests/test_converge.sh tests/test_bf16_train.sh
TESTS += tests/test_bad_input.sh tests/test_converge.sh tests/test_bf16_train.sh
EXTRA_DIST += tests/tap.sh tests/time-limit.sh tests/mux_pair.sh tests/zoo_models.sh tests/tap.h tests/tap_mpi.h tests/model_step.h tests/gradcheck.h tests/gradcheck.c tests/gpt3d.sh tests/small_gpt.h tests/hand_plan.sh tests/same_params.sh
check_PROGRAMS += tests/test_reference
tests_test_reference_SOURCES = tests/test_reference.c tests/refdata.c tests/refdata.h
tests_test_reference_LDADD = $(SURGE_LIBS)
TESTS += tests/test_reference
check_PROGRAMS += tests/h5_compare
tests_h5_compare_SOURCES = tests/h5_compare.c
tests_h5_compare_LDADD = $(SURGE_LIBS)
# Hostile edits of HDF5 files (surge-sim results, profiles, logs) for the hardening tests.
check_PROGRAMS += tests/h5_hostile
tests_h5_hostile_SOURCES = tests/h5_hostile.c
tests_h5_hostile_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/test_dp.sh tests/test_bn.sh tests/test_micro_batches.sh
TESTS += tests/test_dp.sh tests/test_bn.sh tests/test_micro_batches.sh
dist_check_SCRIPTS += tests/test_simd_widths.sh
TESTS += tests/test_simd_widths.sh
dist_check_SCRIPTS += tests/test_restart.sh
TESTS += tests/test_restart.sh
# Hardening (issue 17): a run's data never replaced, outputs locked and checked at the start.
dist_check_SCRIPTS += tests/test_hardening.sh tests/test_stall.sh
TESTS += tests/test_hardening.sh tests/test_stall.sh
# Hardening, second round (issue 36): inputs that are not regular files refused at once, never
# waited on; strings from files shown escaped (ESC, C1, U+202E, invalid UTF-8 in every file printed
# from); a file's numbers printed exactly in messages.
hardening_tests = tests/test_fifo.sh tests/test_escape.sh tests/test_messages.sh
dist_check_SCRIPTS += $(hardening_tests)
TESTS += $(hardening_tests)
# The man pages against the programs: every option --help lists is on the page.
dist_check_SCRIPTS += tests/test_man.sh
TESTS += tests/test_man.sh
# What make install puts in place, away from the source tree (job scripts, make-corpus.sh, the docs' links),
# and what make dist does (every file git tracks).
dist_check_SCRIPTS += tests/test_install.sh tests/test_dist.sh
TESTS += tests/test_install.sh tests/test_dist.sh
# The emulated cluster (tools/cluster-local-*.sh, doc/cluster.md): skipped without root and namespaces.
check_PROGRAMS += tests/p2p_bw
tests_p2p_bw_SOURCES = tests/p2p_bw.c
tests_p2p_bw_LDADD = $(SURGE_LIBS)
EXTRA_DIST += tools/cluster-local-up.sh tools/cluster-local-down.sh tools/cluster-local-exec.sh tools/slurm-local-lib.sh
EXTRA_DIST += tests/cluster.sh
dist_check_SCRIPTS += tests/test_cluster.sh
TESTS += tests/test_cluster.sh
check_PROGRAMS += tests/test_net_fit
tests_test_net_fit_SOURCES = tests/test_net_fit.c
tests_test_net_fit_LDADD = $(SURGE_LIBS)
TESTS += tests/test_net_fit
dist_check_SCRIPTS += tests/test_cluster_slurm.sh
TESTS += tests/test_cluster_slurm.sh
dist_check_SCRIPTS += tests/test_accuracy.sh tests/test_dp_ranks.sh tests/test_node_shared.sh
TESTS += tests/test_accuracy.sh tests/test_dp_ranks.sh tests/test_node_shared.sh
# Activation recomputation (doc/recompute.md): bitwise the parameters without it, its memory saving
dist_check_SCRIPTS += tests/test_recompute.sh
TESTS += tests/test_recompute.sh
dist_check_SCRIPTS += tests/test_act16.sh
TESTS += tests/test_act16.sh
# The distributed optimizer ([parallel] shard_optimizer): equivalence, memory accounting, resumes.
dist_check_SCRIPTS += tests/test_shard_optimizer.sh
TESTS += tests/test_shard_optimizer.sh
# ... on the 3d layout's dp axis and on a burst plan: equivalence, memory accounting, resumes.
dist_check_SCRIPTS += tests/test_shard_layouts.sh
TESTS += tests/test_shard_layouts.sh
# The GPU path (doc/gpu.md): skipped (exit 77) without a GPU; tests/gpu/device-check.sh runs them on one.
check_PROGRAMS += tests/gpu/gpu_probe
tests_gpu_gpu_probe_SOURCES = tests/gpu/gpu_probe.c
tests_gpu_gpu_probe_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/gpu/ops.gpu tests/gpu/attention.gpu tests/gpu/zoo.gpu tests/gpu/dp.gpu tests/gpu/mux.gpu \
  tests/gpu/gen.gpu tests/gpu/epilogues.gpu tests/gpu/absent.sh
TESTS += tests/gpu/ops.gpu tests/gpu/attention.gpu tests/gpu/zoo.gpu tests/gpu/dp.gpu tests/gpu/mux.gpu \
  tests/gpu/gen.gpu tests/gpu/epilogues.gpu tests/gpu/absent.sh
EXTRA_DIST += tests/gpu/lib.sh tests/gpu/limited.sh tests/gpu/device-check.sh tests/gpu/device-pack.sh tests/gpu/device-run.sh \
  tests/gpu/build-kernel-times.sh tests/gpu/kernel_times.c
