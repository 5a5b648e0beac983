libsurge_a_SOURCES += \
  src/nn/layer.c src/nn/layer.h src/nn/layer_input.c src/nn/layer_init.c \
  src/nn/graph.c src/nn/graph.h \
  src/nn/model.c src/nn/model.h src/nn/grad_pool.c src/nn/grad_pool.h src/nn/act_pool.c src/nn/act_pool.h \
  src/nn/grad_alias.c src/nn/grad_alias.h \
  src/nn/act16.c src/nn/act16.h src/nn/act_pass.c src/nn/act_pass.h \
  src/nn/buffer_pool.c src/nn/buffer_pool.h \
  src/nn/zoo.c src/nn/zoo_nets.c src/nn/zoo_inception.c src/nn/zoo_nets.h src/nn/zoo_options.c src/nn/logit_mask.c src/nn/logit_mask.h src/nn/zoo.h

# transformer-family layers
libsurge_a_SOURCES += \
  src/nn/layer_layernorm.c src/nn/layer_embed.c src/nn/layer_attention.c src/nn/layer_tied_linear.c

check_PROGRAMS += tests/test_layers_gpt
tests_test_layers_gpt_SOURCES = tests/test_layers_gpt.c tests/gradcheck.c
tests_test_layers_gpt_LDADD = $(SURGE_LIBS)
TESTS += tests/test_layers_gpt

# CNN-family layers
libsurge_a_SOURCES += \
  src/nn/layer_common.h src/nn/layer_linear.c src/nn/layer_conv2d.c src/nn/layer_pool.c \
  src/nn/layer_flatten.c src/nn/layer_act.c src/nn/layer_add.c src/nn/layer_concat.c src/nn/layer_batchnorm.c src/nn/layer_dropout.c

check_PROGRAMS += tests/test_layers_cnn
tests_test_layers_cnn_SOURCES = tests/test_layers_cnn.c tests/gradcheck.c
tests_test_layers_cnn_LDADD = $(SURGE_LIBS)
TESTS += tests/test_layers_cnn
check_PROGRAMS += tests/test_fusion
tests_test_fusion_SOURCES = tests/test_fusion.c tests/child.c
tests_test_fusion_LDADD = $(SURGE_LIBS)
TESTS += tests/test_fusion

# the networks of DeepPool's evaluation (nn/zoo_nets.c)
check_PROGRAMS += tests/test_zoo_nets
tests_test_zoo_nets_SOURCES = tests/test_zoo_nets.c
tests_test_zoo_nets_LDADD = $(SURGE_LIBS)
TESTS += tests/test_zoo_nets
dist_check_SCRIPTS += tests/test_zoo_nets_run.sh
TESTS += tests/test_zoo_nets_run.sh

# activation recomputation ([train] recompute, nn/recompute.h)
libsurge_a_SOURCES += src/nn/recompute.c src/nn/recompute.h
check_PROGRAMS += tests/test_init_memory
tests_test_init_memory_SOURCES = tests/test_init_memory.c
tests_test_init_memory_LDADD = $(SURGE_LIBS)
TESTS += tests/test_init_memory
