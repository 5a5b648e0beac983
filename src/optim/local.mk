libsurge_a_SOURCES += \
  src/optim/optim.c src/optim/optim.h src/optim/norm.c src/optim/norm.h \
  src/optim/schedule.c src/optim/clip.c src/optim/options.c

# PyTorch reference vectors (float64 truth) read by tests/refdata.c; several areas' tests use them.
EXTRA_DIST += \
  tests/data/reference/README.md tests/data/reference/mlp_tiny.h5 \
  tests/data/reference/cnn_tiny.h5 tests/data/reference/gpt_tiny.h5 \
  tests/data/reference/bn_tiny.h5 tools/bn-reference.py

check_PROGRAMS += tests/test_optim
tests_test_optim_SOURCES = tests/test_optim.c tests/refdata.c tests/refdata.h
tests_test_optim_LDADD = $(SURGE_LIBS)
TESTS += tests/test_optim
