# Compression of critical-path traffic (Optimus-CC): PowerSGD building blocks, compressed
# back-propagation of pipeline gradients, compressor state in checkpoints (doc/compression.md).
libsurge_a_SOURCES += \
  src/compress/powersgd.c src/compress/powersgd.h \
  src/compress/cb.c src/compress/cb.h \
  src/compress/rank_state.c src/compress/rank_state.h src/compress/options.h src/compress/options.c
# The library's invariants on one process (both backends).
check_PROGRAMS += tests/test_compress
tests_test_compress_SOURCES = tests/test_compress.c
tests_test_compress_LDADD = $(SURGE_LIBS)
TESTS += tests/test_compress
# Over real groups: the PowerSGD reducer and compressed back-propagation (tests/test_compress_run.sh
# runs it on 4 ranks, with the 3d runs of tests/test_compress_equiv and surge-train).
check_PROGRAMS += tests/test_compress_mpi
tests_test_compress_mpi_SOURCES = tests/test_compress_mpi.c
tests_test_compress_mpi_LDADD = $(SURGE_LIBS)
check_PROGRAMS += tests/test_compress_equiv
tests_test_compress_equiv_SOURCES = tests/test_compress_equiv.c
tests_test_compress_equiv_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/test_compress_run.sh
TESTS += tests/test_compress_run.sh
