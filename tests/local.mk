# Cross-area tests: whole models against PyTorch references, training runs, bad input.
dist_check_SCRIPTS += tests/test_bad_input.sh tests/test_converge.sh
TESTS += tests/test_bad_input.sh tests/test_converge.sh
EXTRA_DIST += tests/tap.sh tests/tap.h tests/gradcheck.h tests/gradcheck.c
check_PROGRAMS += tests/test_reference
tests_test_reference_SOURCES = tests/test_reference.c tests/refdata.c tests/refdata.h
tests_test_reference_LDADD = $(SURGE_LIBS)
TESTS += tests/test_reference
check_PROGRAMS += tests/h5_compare
tests_h5_compare_SOURCES = tests/h5_compare.c
tests_h5_compare_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/test_dp.sh
TESTS += tests/test_dp.sh
dist_check_SCRIPTS += tests/test_restart.sh
TESTS += tests/test_restart.sh
# Hardening (issue 17): a run's data never replaced, outputs locked and checked at the start.
dist_check_SCRIPTS += tests/test_hardening.sh
TESTS += tests/test_hardening.sh
