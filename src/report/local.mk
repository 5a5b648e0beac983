# surge-report: post-run analysis of the HDF5 metrics logs (doc/report.md). JSON export uses cJSON
# (libcjson, found by configure), needed only by the programs that link src/report/export.c.
AM_CPPFLAGS += $(CJSON_CFLAGS)
libsurge_a_SOURCES += src/report/report.h src/report/svg.h \
  src/report/phases.c src/report/metrics.c src/report/grid.c \
  src/report/summary.c src/report/table.c src/report/views.c \
  src/report/export.c src/report/damage.c src/report/svg.c src/report/plot.c src/report/figures.c \
  src/report/outputs.c src/report/report_main.c
bin_PROGRAMS += surge-report
surge_report_SOURCES = src/apps/surge_report.c
surge_report_LDADD = $(SURGE_LIBS) $(CJSON_LIBS)
# Unit checks of the library (also the log-damaging helper of test_report.sh), then real runs.
check_PROGRAMS += tests/test_report_lib
tests_test_report_lib_SOURCES = tests/test_report_lib.c
tests_test_report_lib_LDADD = $(SURGE_LIBS) $(CJSON_LIBS)
TESTS += tests/test_report_lib
dist_check_SCRIPTS += tests/test_report.sh
TESTS += tests/test_report.sh
# Logs of a multiplexed run (foreground and backgrounds) and of its foreground alone.
dist_check_SCRIPTS += tests/test_report_mux.sh
TESTS += tests/test_report_mux.sh
# The burst plan of a run in its log (/plan) and in the summary.
dist_check_SCRIPTS += tests/test_plan_log.sh
TESTS += tests/test_plan_log.sh
