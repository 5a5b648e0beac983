# Burst parallelism (DeepPool): profile, planner, plan files.
libsurge_a_SOURCES += \
  src/burst/options.c src/burst/options.h \
  src/burst/profile.c src/burst/profile.h src/burst/bgraph.c src/burst/bgraph.h \
  src/burst/plan.h src/burst/plan_impl.h \
  src/burst/plan_graph.c src/burst/plan_cost.c src/burst/plan_bn.c src/burst/plan_eval.c src/burst/plan_pareto.c \
  src/burst/planner.c src/burst/plan_recover.c src/burst/plan_frontier.c src/burst/plan_api.c src/burst/plan_log.h src/burst/plan_log.c src/burst/plan_log_part.c src/burst/report_plan.c \
  src/burst/plan_print.c src/burst/plan_file.c src/burst/textio.c src/burst/textio.h \
  src/burst/graph_file.c src/burst/graph_file.h src/burst/graph_ties.c src/burst/graph_ties.h src/burst/deeppool.c src/burst/plan_input.c src/burst/plan_input.h \
  src/burst/executor.c src/burst/executor.h src/burst/pass_order.c src/burst/pass_order.h \
  src/burst/layout.c src/burst/layout.h \
  src/burst/plan_text.c src/burst/plan_text.h

check_PROGRAMS += tests/test_planner tests/test_frontier tests/test_graph_file
tests_test_graph_file_SOURCES = tests/test_graph_file.c tests/child.c tests/child.h
tests_test_graph_file_LDADD = $(SURGE_LIBS)
TESTS += tests/test_graph_file
tests_test_frontier_SOURCES = tests/test_frontier.c
tests_test_frontier_LDADD = $(SURGE_LIBS)
TESTS += tests/test_frontier
tests_test_planner_SOURCES = tests/test_planner.c tests/child.c tests/child.h
tests_test_planner_LDADD = $(SURGE_LIBS)
TESTS += tests/test_planner

nobase_dist_doc_DATA += doc/burst.md

# The burst executor's equivalence test: make_plan writes the planner's plan for a synthetic profile.
check_PROGRAMS += tests/make_plan
tests_make_plan_SOURCES = tests/make_plan.c
tests_make_plan_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/test_burst.sh
TESTS += tests/test_burst.sh

# Batch norm's sums overlapped with other nodes (burst/pass_order.h): the order's promises on the zoo's
# graphs; on = off bit for bit on 2 and 4 ranks, and it happens.
check_PROGRAMS += tests/test_pass_order
tests_test_pass_order_SOURCES = tests/test_pass_order.c
tests_test_pass_order_LDADD = $(SURGE_LIBS)
TESTS += tests/test_pass_order
check_PROGRAMS += tests/test_bn_overlap
tests_test_bn_overlap_SOURCES = tests/test_bn_overlap.c
tests_test_bn_overlap_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/test_bn_overlap.sh
TESTS += tests/test_bn_overlap.sh

# The profiler (library part) and its file format; surge-profile measures, surge-plan plans.
libsurge_a_SOURCES += src/burst/profiler.c src/burst/profiler.h src/burst/profile_h5.c
bin_PROGRAMS += surge-profile surge-plan
surge_profile_SOURCES = src/apps/surge_profile.c
surge_profile_LDADD = $(SURGE_LIBS)
surge_plan_SOURCES = src/apps/surge_plan.c
surge_plan_LDADD = $(SURGE_LIBS)

# surge-plan from graph files and DeepPool profiles.
dist_check_SCRIPTS += tests/test_plan_files.sh
TESTS += tests/test_plan_files.sh

# Profile, plan, run: surge-profile on 1 and 2 ranks, surge-plan, surge-train on the plan.
check_PROGRAMS += tests/profile_damage
tests_profile_damage_SOURCES = tests/profile_damage.c
tests_profile_damage_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/test_profile_plan.sh
TESTS += tests/test_profile_plan.sh

# Small graph files of the planner's and simulator's tests.
EXTRA_DIST += tests/data/graphs/nest.graph tests/data/graphs/seg.graph
# DeepPool's A100 profiles (MIT, with their licence) and Surge's Inception-v3 structure file.
EXTRA_DIST += tests/data/deeppool/A100_vgg.prof tests/data/deeppool/A100_wrn.prof \
  tests/data/deeppool/A100_inception.prof tests/data/deeppool/LICENSE tests/data/deeppool/README.md \
  tests/data/deeppool/inception-v3.graph
