libsurge_a_SOURCES += \
  src/train/train.c src/train/train.h \
  src/train/progress.c src/train/progress.h
libsurge_a_SOURCES += src/train/run.c src/train/run.h src/train/claim.c src/train/claim.h
libsurge_a_SOURCES += src/train/state.c src/train/state.h src/train/sample.c src/train/sample.h
libsurge_a_SOURCES += src/train/recompute_options.c src/train/recompute_options.h
libsurge_a_SOURCES += src/train/multiplex.c src/train/multiplex.h
# An in-process background ([multiplex] placement = thread): a second trainer in a thread.
libsurge_a_SOURCES += src/train/inproc.c src/train/inproc.h
TESTS += tests/test_mux_thread.sh tests/test_mux_thread_job.sh
dist_check_SCRIPTS += tests/test_mux_thread.sh tests/test_mux_thread_job.sh
