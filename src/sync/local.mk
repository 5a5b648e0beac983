# Gradient synchronisation: buckets over the gradient slab and the reducers that sum them.
libsurge_a_SOURCES += \
  src/sync/gradsync.c src/sync/gradsync.h \
  src/sync/reducer.h src/sync/reducer_exact.c src/sync/reducer_powersgd.c src/sync/reducer_scatter.c \
  src/sync/reducer_split.c \
  src/sync/shard.c src/sync/shard.h src/sync/shard_gather.c src/sync/shard_gather.h \
  src/sync/node_sum.c src/sync/node_sum.h \
  src/sync/options.c src/sync/options.h
check_PROGRAMS += tests/test_overlap
tests_test_overlap_SOURCES = tests/test_overlap.c
tests_test_overlap_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/test_overlap.sh
TESTS += tests/test_overlap.sh
check_PROGRAMS += tests/test_step_collectives
tests_test_step_collectives_SOURCES = tests/test_step_collectives.c
tests_test_step_collectives_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/test_step_collectives.sh
TESTS += tests/test_step_collectives.sh
check_PROGRAMS += tests/test_shard
tests_test_shard_SOURCES = tests/test_shard.c
tests_test_shard_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/test_shard.sh
TESTS += tests/test_shard.sh
