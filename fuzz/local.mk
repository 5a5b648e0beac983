# libFuzzer harnesses (doc/security.md, "Fuzzing"): built only by tools/fuzz.sh (make fuzz), in a
# build directory of its own configured with clang and -fsanitize=fuzzer-no-link,address,undefined;
# never part of a normal build (EXTRA_PROGRAMS).
fuzz_programs += fuzz/fuzz_deck fuzz/fuzz_sweep fuzz/fuzz_checkpoint fuzz/fuzz_log fuzz/fuzz_plan fuzz/fuzz_profile \
  fuzz/fuzz_tok fuzz/fuzz_sim fuzz/fuzz_graph fuzz/fuzz_deeppool fuzz/fuzz_weights
CLEANFILES += $(fuzz_programs)
fuzz_common = fuzz/fuzz.h fuzz/fuzz_common.c
fuzz_fuzz_deck_SOURCES = fuzz/fuzz_deck.c $(fuzz_common)
fuzz_fuzz_deck_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_deck_LDADD = $(SURGE_LIBS)
fuzz_fuzz_sweep_SOURCES = fuzz/fuzz_sweep.c $(fuzz_common)
fuzz_fuzz_sweep_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_sweep_LDADD = $(SURGE_LIBS)
fuzz_fuzz_checkpoint_SOURCES = fuzz/fuzz_checkpoint.c $(fuzz_common)
fuzz_fuzz_checkpoint_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_checkpoint_LDADD = $(SURGE_LIBS)
fuzz_fuzz_log_SOURCES = fuzz/fuzz_log.c $(fuzz_common)
fuzz_fuzz_log_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_log_LDADD = $(SURGE_LIBS) $(CJSON_LIBS)
fuzz_burst = fuzz/fuzz_burst.h fuzz/fuzz_burst.c
fuzz_fuzz_plan_SOURCES = fuzz/fuzz_plan.c $(fuzz_common) $(fuzz_burst)
fuzz_fuzz_plan_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_plan_LDADD = $(SURGE_LIBS)
fuzz_fuzz_profile_SOURCES = fuzz/fuzz_profile.c $(fuzz_common) $(fuzz_burst)
fuzz_fuzz_profile_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_profile_LDADD = $(SURGE_LIBS)
fuzz_fuzz_tok_SOURCES = fuzz/fuzz_tok.c $(fuzz_common)
fuzz_fuzz_tok_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_tok_LDADD = $(SURGE_LIBS)
fuzz_fuzz_sim_SOURCES = fuzz/fuzz_sim.c $(fuzz_common)
fuzz_fuzz_sim_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_sim_LDADD = $(SURGE_LIBS) $(CJSON_LIBS)
fuzz_graph = fuzz/fuzz_graph.h fuzz/fuzz_graph_check.c
fuzz_fuzz_graph_SOURCES = fuzz/fuzz_graph.c $(fuzz_common) $(fuzz_graph)
fuzz_fuzz_graph_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_graph_LDADD = $(SURGE_LIBS)
fuzz_fuzz_deeppool_SOURCES = fuzz/fuzz_deeppool.c $(fuzz_common) $(fuzz_graph)
fuzz_fuzz_deeppool_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_deeppool_LDADD = $(SURGE_LIBS)
fuzz_fuzz_weights_SOURCES = fuzz/fuzz_weights.c $(fuzz_common)
fuzz_fuzz_weights_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_weights_LDADD = $(SURGE_LIBS)
fuzz-programs: $(fuzz_programs) surge-train$(EXEEXT) surge-profile$(EXEEXT) surge-plan$(EXEEXT) surge-sim$(EXEEXT)
# make fuzz [FUZZ_SECONDS=N]: every harness for N seconds (default 60) from its seed corpus.
fuzz:
	$(SHELL) $(srcdir)/tools/fuzz.sh $(FUZZ_SECONDS)
.PHONY: fuzz fuzz-programs
EXTRA_DIST += tools/fuzz.sh tools/sanitize.sh
EXTRA_DIST += fuzz/regressions/log/events-text-length-4gib.h5 fuzz/regressions/log/chunk-smaller-than-its-chunks.h5
EXTRA_DIST += fuzz/regressions/profile/median-stores-less-than-its-shape.h5
EXTRA_DIST += fuzz/regressions/sim/integer-precision-993-bits-in-4-bytes.h5 fuzz/regressions/sim/integer-offset-8192-bits-in-4-bytes.h5
EXTRA_DIST += fuzz/regressions/checkpoint/chunk-index-past-its-extent.h5
