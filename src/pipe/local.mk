# 3D parallelism (tensor x pipeline x data) of the gpt: the "3d" layout (doc/3d.md).
libsurge_a_SOURCES += src/pipe/schedule.h src/pipe/schedule.c src/pipe/partition.h src/pipe/partition.c \
  src/pipe/gpt_part.h src/pipe/gpt_part.c src/pipe/tp.h src/pipe/tp.c src/pipe/timeline.h src/pipe/timeline.c \
  src/pipe/p2p.h src/pipe/p2p.c src/pipe/p2p_cb.h src/pipe/p2p_cb.c src/pipe/exec.h src/pipe/exec.c src/pipe/exec_compress.c src/pipe/layout.h src/pipe/layout.c \
  src/pipe/pipe_log.h src/pipe/pipe_log.c src/pipe/report_pipeline.c src/pipe/report_compress.c \
  src/pipe/options.c src/pipe/options.h
# The schedule generator for every (PP, M) up to 8 x 16 and the stage partition.
check_PROGRAMS += tests/test_pipe_schedule
tests_test_pipe_schedule_SOURCES = tests/test_pipe_schedule.c
tests_test_pipe_schedule_LDADD = $(SURGE_LIBS)
TESTS += tests/test_pipe_schedule
# 3D layouts against one rank (one 8-rank job), and 3d runs through surge-train: resume, log, report,
# bad input (tests/test_3d.sh runs both).
check_PROGRAMS += tests/test_pipe_equiv
tests_test_pipe_equiv_SOURCES = tests/test_pipe_equiv.c
tests_test_pipe_equiv_LDADD = $(SURGE_LIBS)
# The same against a copy of the zoo whose gpt nodes have other, swapped names (q, k, v projection and
# attention output, the two MLP layers, embedding and output layer): the 3d layout reads roles, not
# names. The copy's symbols replace nn/zoo.o of the library in this program.
check_PROGRAMS += tests/test_pipe_equiv_renamed
tests_test_pipe_equiv_renamed_SOURCES = tests/test_pipe_equiv.c
nodist_tests_test_pipe_equiv_renamed_SOURCES = tests/zoo_renamed.c
tests_test_pipe_equiv_renamed_CPPFLAGS = $(AM_CPPFLAGS) -DPIPE_EQUIV_RENAMED
tests_test_pipe_equiv_renamed_LDADD = $(SURGE_LIBS)
CLEANFILES += tests/zoo_renamed.c
tests/zoo_renamed.c: $(top_srcdir)/src/nn/zoo.c
	$(MKDIR_P) tests
	sed -e 's/"blocks\.%d\."/"layer%d."/' \
	  -e 's/BLOCK_NAME("qkv")/BLOCK_NAME("@a")/; s/BLOCK_NAME("proj")/BLOCK_NAME("qkv")/; s/BLOCK_NAME("@a")/BLOCK_NAME("proj")/' \
	  -e 's/BLOCK_NAME("fc")/BLOCK_NAME("@b")/; s/BLOCK_NAME("fcproj")/BLOCK_NAME("fc")/; s/BLOCK_NAME("@b")/BLOCK_NAME("fcproj")/' \
	  -e 's/"wte"/"@c"/; s/"lm_head"/"wte"/g; s/"@c"/"lm_head"/; s/"lnf"/"final_norm"/' \
	  $(top_srcdir)/src/nn/zoo.c >$@.tmp && mv $@.tmp $@
dist_check_SCRIPTS += tests/test_3d.sh
TESTS += tests/test_3d.sh
# A rank's host memory at start-up: its pieces' values, never the whole model's.
dist_check_SCRIPTS += tests/test_3d_memory.sh
TESTS += tests/test_3d_memory.sh
