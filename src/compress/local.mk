# Compression of critical-path traffic (Optimus-CC): PowerSGD building blocks, compressed
# back-propagation of pipeline gradients, compressor state in checkpoints (doc/compression.md).
libsurge_a_SOURCES += \
  src/compress/powersgd.c src/compress/powersgd.h \
  src/compress/cb.c src/compress/cb.h \
  src/compress/rank_state.c src/compress/rank_state.h src/compress/options.h
