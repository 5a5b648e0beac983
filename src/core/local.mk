libsurge_a_SOURCES += \
  src/core/error.c src/core/error.h \
  src/core/rng.c src/core/rng.h \
  src/core/slab.c src/core/slab.h \
  src/core/state.c src/core/state.h \
  src/core/cli.c src/core/cli.h \
  src/core/shape.h src/core/timer.h
