# 3D parallelism (tensor x pipeline x data) of the gpt: the "3d" layout (doc/3d.md).
libsurge_a_SOURCES += src/pipe/schedule.h src/pipe/schedule.c src/pipe/partition.h src/pipe/partition.c \
  src/pipe/gpt_part.h src/pipe/gpt_part.c src/pipe/tp.h src/pipe/tp.c src/pipe/timeline.h src/pipe/timeline.c \
  src/pipe/p2p.h src/pipe/p2p.c src/pipe/exec.h src/pipe/exec.c src/pipe/layout.h src/pipe/layout.c
