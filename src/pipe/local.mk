# 3D parallelism (tensor x pipeline x data) of the gpt: the "3d" layout (doc/3d.md).
libsurge_a_SOURCES += src/pipe/schedule.h src/pipe/schedule.c src/pipe/partition.h src/pipe/partition.c \
  src/pipe/gpt_part.h src/pipe/gpt_part.c src/pipe/tp.h src/pipe/tp.c src/pipe/timeline.h src/pipe/timeline.c \
  src/pipe/p2p.h src/pipe/p2p.c src/pipe/exec.h src/pipe/exec.c src/pipe/layout.h src/pipe/layout.c
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
dist_check_SCRIPTS += tests/test_3d.sh
TESTS += tests/test_3d.sh
