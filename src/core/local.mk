libsurge_a_SOURCES += \
  src/core/error.c src/core/error.h \
  src/core/outfile.c src/core/outfile.h \
  src/core/say.c src/core/say.h \
  src/core/rng.c src/core/rng.h \
  src/core/slab.c src/core/slab.h \
  src/core/state.c src/core/state.h \
  src/core/rss.c src/core/rss.h \
  src/core/names.c src/core/names.h \
  src/core/cli.c src/core/cli.h src/core/share.h \
  src/core/events.c src/core/events.h \
  src/core/infile.c src/core/infile.h \
  src/core/exact.c src/core/exact.h \
  src/core/pace.c src/core/pace.h \
  src/core/watchdog.c src/core/watchdog.h \
  src/core/shape.h src/core/timer.h src/core/keys.h src/core/bf16.h
check_PROGRAMS += tests/test_pace
tests_test_pace_SOURCES = tests/test_pace.c
tests_test_pace_LDADD = $(SURGE_LIBS)
TESTS += tests/test_pace
check_PROGRAMS += tests/test_say
tests_test_say_SOURCES = tests/test_say.c
tests_test_say_LDADD = $(SURGE_LIBS)
TESTS += tests/test_say
