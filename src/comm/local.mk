# The comm layer: metered MPI collectives and point-to-point transfers (src/comm/comm.h), and its
# device side for GPU buffers: NCCL or staging (comm_nccl.c with CUDA, comm_dev_absent.c without).
libsurge_a_SOURCES += src/comm/comm.c src/comm/comm.h src/comm/comm_dev.h src/comm/node_shm.c src/comm/node_shm.h \
  src/comm/ring.c src/comm/ring.h src/comm/parts.c src/comm/parts.h
if HAVE_CUDA
libsurge_a_SOURCES += src/comm/comm_nccl.c
# The device side as a GPU build has it, over a faked CUDA runtime and NCCL made of MPI (tests/comm_dev_fakes.h):
# it needs the toolkit's headers, not a GPU, and links no CUDA library.
check_PROGRAMS += tests/test_comm_dev
tests_test_comm_dev_SOURCES = tests/test_comm_dev.c tests/comm_dev_fakes.c tests/comm_dev_fakes.h src/comm/comm.c \
  src/comm/comm_nccl.c src/comm/ring.c src/comm/parts.c tests/cuda_fake_error.c tests/cuda_fake_error.h
tests_test_comm_dev_LDADD = libsurge.a -lm
TESTS += tests/test_comm_dev.sh
dist_check_SCRIPTS += tests/test_comm_dev.sh
else
libsurge_a_SOURCES += src/comm/comm_dev_absent.c
endif
check_PROGRAMS += tests/test_comm
tests_test_comm_SOURCES = tests/test_comm.c
tests_test_comm_LDADD = $(SURGE_LIBS)
TESTS += tests/test_comm.sh
dist_check_SCRIPTS += tests/test_comm.sh
check_PROGRAMS += tests/test_ring
tests_test_ring_SOURCES = tests/test_ring.c
tests_test_ring_LDADD = $(SURGE_LIBS)
TESTS += tests/test_ring.sh
dist_check_SCRIPTS += tests/test_ring.sh
check_PROGRAMS += tests/test_comm_parts
tests_test_comm_parts_SOURCES = tests/test_comm_parts.c
tests_test_comm_parts_LDADD = $(SURGE_LIBS)
TESTS += tests/test_comm_parts
