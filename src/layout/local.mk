# Parallel layouts: the interface the trainer runs and the table of layouts.
libsurge_a_SOURCES += src/layout/layout.h src/layout/layouts.c src/layout/log_parts.h src/layout/log_parts.c \
  src/layout/deck_parts.c src/layout/mode_option.c
dist_check_SCRIPTS += tests/test_layout_agnostic.sh
TESTS += tests/test_layout_agnostic.sh
