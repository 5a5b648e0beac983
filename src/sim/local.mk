# surge-sim: burst plans and background jobs at cluster scale, and 3D layouts (doc/sim.md).
libsurge_a_SOURCES += src/sim/sim.h src/sim/timeline.c src/sim/background.c src/sim/cluster.c \
  src/sim/pipe3d.c src/sim/sim_h5.c src/sim/sim_read.h src/sim/sim_read.c src/sim/sim_report.c
bin_PROGRAMS += surge-sim
surge_sim_SOURCES = src/apps/surge_sim.c
surge_sim_LDADD = $(SURGE_LIBS)
nobase_dist_doc_DATA += doc/sim.md
check_PROGRAMS += tests/test_sim
tests_test_sim_SOURCES = tests/test_sim.c tests/child.c tests/child.h
tests_test_sim_LDADD = $(SURGE_LIBS)
TESTS += tests/test_sim
dist_check_SCRIPTS += tests/test_sim_programs.sh
TESTS += tests/test_sim_programs.sh
# surge-report on hostile surge-sim files (issue 36)
dist_check_SCRIPTS += tests/test_sim_report.sh
TESTS += tests/test_sim_report.sh
dist_man_MANS += doc/man/surge-sim.1
