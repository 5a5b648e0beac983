#include "io/options.h"

#include <string.h>

#include "mux/mux.h"

_Static_assert(ZOO_MAX_LIST == CFG_MAX_LIST, "a deck's width list must fit the zoo's");

/* A deck string into a part's buffer, which is at least as long (checked when compiling). */
#define COPY_STRING(dst, src)                                                                                \
  do {                                                                                                       \
    _Static_assert(sizeof(dst) >= sizeof(src), "option string too short for its deck key");                 \
    memcpy(dst, src, sizeof(src));                                                                           \
  } while (0)

zoo_opts_t zoo_opts_of(const config_t *cfg) {
  zoo_opts_t o = {0};
  COPY_STRING(o.model, cfg->zoo);
  memcpy(o.mlp.hidden, cfg->mlp_hidden, sizeof o.mlp.hidden);
  o.mlp.nhidden = cfg->mlp_nhidden;
  memcpy(o.vgg.channels, cfg->vgg_channels, sizeof o.vgg.channels);
  o.vgg.nstages = cfg->vgg_nstages;
  o.vgg.fc = cfg->vgg_fc;
  o.resnet.width = cfg->resnet_width;
  o.resnet.blocks = cfg->resnet_blocks;
  o.resnet.stages = cfg->resnet_stages;
  o.batchnorm = strcmp(cfg->norm, "batchnorm") == 0;
  o.bn_local = strcmp(cfg->batchnorm, "local") == 0;
  o.dropout = (float)cfg->dropout;
  o.gpt.layers = cfg->gpt_layers;
  o.gpt.width = cfg->gpt_width;
  o.gpt.heads = cfg->gpt_heads;
  o.gpt.context = cfg->gpt_context;
  o.gpt.vocab_multiple = cfg->gpt_vocab_multiple;
  return o;
}

optim_opts_t optim_opts_of(const config_t *cfg) {
  optim_opts_t o = {0};
  COPY_STRING(o.name, cfg->optimizer);
  o.momentum = cfg->momentum;
  o.weight_decay = cfg->weight_decay;
  o.beta1 = cfg->beta1;
  o.beta2 = cfg->beta2;
  o.eps = cfg->eps;
  o.nesterov = cfg->nesterov;
  COPY_STRING(o.schedule.kind, cfg->schedule);
  o.schedule.lr = cfg->lr;
  o.schedule.min_lr = cfg->min_lr;
  o.schedule.warmup_steps = cfg->warmup_steps;
  o.schedule.steps = cfg->steps;
  return o;
}

data_opts_t data_opts_of(const config_t *cfg) {
  data_opts_t o = {0};
  COPY_STRING(o.source, cfg->data_source);
  COPY_STRING(o.path, cfg->data_path);
  COPY_STRING(o.val_path, cfg->val_path);
  COPY_STRING(o.tokenizer, cfg->tokenizer);
  o.vocab_size = cfg->vocab_size;
  o.train_samples = cfg->train_samples;
  o.test_samples = cfg->test_samples;
  o.val_fraction = cfg->val_fraction;
  o.synthetic_samples = cfg->synthetic_samples;
  o.seed = cfg->seed;
  o.sequences = zoo_takes_sequences(cfg->zoo);
  o.context = cfg->gpt_context;
  return o;
}

backend_options_t backend_opts_of(const config_t *cfg, int local_rank) {
  backend_options_t o = backend_default_options();
  o.device = cfg->device;
  o.local_rank = local_rank;
  o.precision = strcmp(cfg->precision, "bf16") == 0 ? BACKEND_BF16 : BACKEND_FP32;
  o.tf32 = cfg->tf32;
  o.flush_denormals = cfg->flush_denormals;
  o.simd = strcmp(cfg->simd, "avx512") == 0 ? BACKEND_SIMD_AVX512
           : strcmp(cfg->simd, "avx2") == 0 ? BACKEND_SIMD_AVX2
           : strcmp(cfg->simd, "none") == 0 ? BACKEND_SIMD_NONE
                                             : BACKEND_SIMD_AUTO;
  o.low_priority = cfg->mux_role == MUX_ROLE_BACKGROUND;
  return o;
}

const char *backend_opts_where(const config_t *cfg, const deck_t *deck) {
  return deck_where(deck, strcmp(cfg->precision, "fp32") != 0 ? "backend.precision"
                         : strcmp(cfg->simd, "auto") != 0    ? "backend.simd"
                                                             : "backend.name");
}

comm_device_mode_t device_comm_of(const config_t *cfg) {
  if (strcmp(cfg->device_comm, "nccl") == 0) return COMM_DEVICE_NCCL;
  if (strcmp(cfg->device_comm, "staged") == 0) return COMM_DEVICE_STAGED;
  return COMM_DEVICE_AUTO;
}
