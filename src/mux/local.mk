# Foreground/background multiplexing (DeepPool): partner channel, gating, OS priority, launch roles.
libsurge_a_SOURCES += \
	src/mux/mux.h \
	src/mux/mux_impl.h \
	src/mux/channel.c \
	src/mux/foreground.c \
	src/mux/background.c \
	src/mux/pieces.c \
	src/mux/feedback.c \
	src/mux/priority.c \
	src/mux/session.c \
	src/mux/launch.h \
	src/mux/launch.c \
	src/mux/mux_log.h \
	src/mux/mux_log.c \
	src/mux/report_mux.c \
	src/mux/options.h \
	src/mux/options.c
check_PROGRAMS += tests/test_mux
tests_test_mux_SOURCES = tests/test_mux.c tests/child.c
tests_test_mux_LDADD = $(SURGE_LIBS)
TESTS += tests/test_mux
TESTS += tests/test_multiplex.sh
dist_check_SCRIPTS += tests/test_multiplex.sh
# Backgrounds in a 3d foreground's pipeline bubbles (the pipeline's waits raised as events).
TESTS += tests/test_multiplex_3d.sh
dist_check_SCRIPTS += tests/test_multiplex_3d.sh
