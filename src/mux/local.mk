# Foreground/background multiplexing (DeepPool): partner channel, gating, OS priority, launch roles.
libsurge_a_SOURCES += \
	src/mux/mux.h \
	src/mux/mux_impl.h \
	src/mux/channel.c \
	src/mux/foreground.c \
	src/mux/background.c \
	src/mux/priority.c \
	src/mux/launch.h \
	src/mux/launch.c
