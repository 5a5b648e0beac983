libsurge_a_SOURCES += \
  src/backend/backend.c src/backend/backend.h \
  src/backend/host_mem.c src/backend/host_mem.h \
  src/backend/ref.c \
  src/backend/cpu.c src/backend/cpu_ops.h src/backend/cpu_gemm.c src/backend/cpu_elementwise.c \
  src/backend/cpu_conv.c src/backend/cpu_conv_batch.c src/backend/cpu_conv_direct.c src/backend/cpu_seq.c src/backend/cpu_optim.c

check_PROGRAMS += tests/test_backend
tests_test_backend_SOURCES = tests/test_backend.c
tests_test_backend_LDADD = $(SURGE_LIBS)
TESTS += tests/test_backend
