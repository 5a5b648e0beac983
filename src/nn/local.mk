libsurge_a_SOURCES += \
  src/nn/layer.c src/nn/layer.h src/nn/layer_input.c src/nn/layer_init.c \
  src/nn/graph.c src/nn/graph.h \
  src/nn/model.c src/nn/model.h
