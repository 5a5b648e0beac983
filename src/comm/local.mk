# The comm layer: metered MPI collectives and point-to-point transfers (src/comm/comm.h).
libsurge_a_SOURCES += src/comm/comm.c src/comm/comm.h
check_PROGRAMS += tests/test_comm
tests_test_comm_SOURCES = tests/test_comm.c
tests_test_comm_LDADD = $(SURGE_LIBS)
TESTS += tests/test_comm.sh
dist_check_SCRIPTS += tests/test_comm.sh
