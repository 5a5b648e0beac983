libsurge_a_SOURCES += \
  src/io/config.h src/io/model_file.c src/io/model_file.h \
  src/io/weights.c src/io/weights.h src/io/weights_h5.c src/io/safetensors.c src/io/llmc_file.c \
  src/io/gpt2_map.c src/io/gpt2_map.h \
  src/io/h5util.c src/io/h5util.h src/io/h5serial.c src/io/h5serial.h \
  src/io/deck_shared.c src/io/deck_shared.h \
  src/io/strbuf.c src/io/strbuf.h src/io/printable.c src/io/printable.h src/io/run_dir.c src/io/run_dir.h \
  src/io/outputs.c src/io/outputs.h \
  src/io/config_schema.c src/io/config_schema.h \
  src/io/deck_value.c src/io/deck_value.h \
  src/io/deck.c src/io/deck.h src/io/deck_text.c src/io/deck_lex.c src/io/deck_lex.h

check_PROGRAMS += tests/test_deck
tests_test_deck_SOURCES = tests/test_deck.c tests/child.c tests/child.h
tests_test_deck_LDADD = $(SURGE_LIBS)
TESTS += tests/test_deck
EXTRA_DIST += tests/data/decks/full.deck

# Each part's options from the deck's configuration (src/io/options.h).
libsurge_a_SOURCES += src/io/options.c src/io/options.h
check_PROGRAMS += tests/test_options
tests_test_options_SOURCES = tests/test_options.c
tests_test_options_LDADD = $(SURGE_LIBS)
TESTS += tests/test_options
# nn, optim and data take their own options, never the deck's configuration.
dist_check_SCRIPTS += tests/test_layering.sh
TESTS += tests/test_layering.sh

# Checkpoints (src/io/checkpoint.h; layout and guarantees in doc/checkpoints.md).
libsurge_a_SOURCES += src/io/checkpoint.c src/io/checkpoint.h src/io/checkpoint_impl.h \
  src/io/checkpoint_write.c src/io/checkpoint_read.c src/io/checkpoint_layout.c src/io/checkpoint_h5.c \
  src/io/checkpoint_files.c src/io/checkpoint_config.c src/io/checkpoint_agree.c
check_PROGRAMS += tests/test_checkpoint
tests_test_checkpoint_SOURCES = tests/test_checkpoint.c
tests_test_checkpoint_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/test_checkpoint.sh
TESTS += tests/test_checkpoint.sh

# The HDF5 metrics log (doc/formats.md). Its dimension scales (H5DS*) need the HDF5 high-level
# library (-lhdf5_hl in SURGE_LIBS, Makefile.am).
libsurge_a_SOURCES += src/io/log.c src/io/log.h src/io/log_impl.h src/io/log_parts.c src/io/log_part.h src/io/log_h5.c src/io/log_h5.h src/io/log_format.c src/io/log_format.h \
  src/io/log_read.c src/io/log_read_table.c src/io/log_read_strings.c src/io/log_read_impl.h src/io/log_read.h src/io/log_check.c src/io/log_check.h
check_PROGRAMS += tests/test_h5util
tests_test_h5util_SOURCES = tests/test_h5util.c tests/child.c tests/child.h
tests_test_h5util_LDADD = $(SURGE_LIBS)
TESTS += tests/test_h5util
check_PROGRAMS += tests/test_log
tests_test_log_SOURCES = tests/test_log.c
tests_test_log_LDADD = $(SURGE_LIBS)
TESTS += tests/test_log.sh
dist_check_SCRIPTS += tests/test_log.sh

# Parameter sweeps: the deck's [sweep] section (src/io/sweep.h; syntax in doc/sweeps.md).
libsurge_a_SOURCES += src/io/sweep.c src/io/sweep.h src/io/sweep_impl.h src/io/sweep_variant.c \
  src/io/sweep_text.c
check_PROGRAMS += tests/test_sweep
tests_test_sweep_SOURCES = tests/test_sweep.c
tests_test_sweep_LDADD = $(SURGE_LIBS)
TESTS += tests/test_sweep
dist_check_SCRIPTS += tests/test_sweep_programs.sh
TESTS += tests/test_sweep_programs.sh
