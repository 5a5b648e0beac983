libsurge_a_SOURCES += \
  src/io/config.h src/io/model_file.c src/io/model_file.h \
  src/io/strbuf.c src/io/strbuf.h \
  src/io/config_schema.c src/io/config_schema.h \
  src/io/deck_value.c src/io/deck_value.h \
  src/io/deck.c src/io/deck.h src/io/deck_text.c

check_PROGRAMS += tests/test_deck
tests_test_deck_SOURCES = tests/test_deck.c
tests_test_deck_LDADD = $(SURGE_LIBS)
TESTS += tests/test_deck
EXTRA_DIST += tests/data/decks/full.deck
