libsurge_a_SOURCES += \
  src/data/dataset.c src/data/dataset.h src/data/dataset_impl.h \
  src/data/idx.c src/data/idx.h src/data/fmnist.c \
  src/data/text.c src/data/synthetic.c src/data/sampler.c src/data/walk.c src/data/walk.h \
  src/data/shard.c src/data/shard.h src/data/tokens.c src/data/options.c

check_PROGRAMS += tests/test_data
tests_test_data_SOURCES = tests/test_data.c tests/child.c tests/child.h
tests_test_data_LDADD = $(SURGE_LIBS)
TESTS += tests/test_data
# The tokens source on llm.c shards that tests/write_shard.py writes (doc/data.md).
dist_check_SCRIPTS += tests/test_tokens.sh
TESTS += tests/test_tokens.sh
EXTRA_DIST += tests/write_shard.py
