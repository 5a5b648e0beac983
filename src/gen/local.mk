# Generation from a trained gpt (doc/generate.md): the model and its vocabulary from a model file
# and its deck, two engines (a key/value cache, and the whole context every token), sampling, and
# surge-sample's job.
libsurge_a_SOURCES += \
  src/gen/model.c src/gen/model.h src/gen/engine.h src/gen/engine_cache.c src/gen/engine_full.c \
  src/gen/pick.c src/gen/pick.h src/gen/generate.c src/gen/generate.h src/gen/vocab.c src/gen/vocab.h \
  src/gen/source.c src/gen/source.h src/gen/job.c src/gen/job.h

check_PROGRAMS += tests/test_gen
tests_test_gen_SOURCES = tests/test_gen.c
tests_test_gen_LDADD = $(SURGE_LIBS)
TESTS += tests/test_gen

dist_check_SCRIPTS += tests/test_sample.sh
TESTS += tests/test_sample.sh
