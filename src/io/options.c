#include "io/options.h"

#include <float.h>
#include <string.h>

#include "core/error.h"

zoo_opts_t zoo_opts_of(const config_t *cfg) {
  zoo_opts_t o = *zoo_opts(cfg);
  _Static_assert(sizeof o.model >= sizeof cfg->zoo, "the zoo's model name is shorter than the deck's");
  memcpy(o.model, cfg->zoo, sizeof cfg->zoo);
  return o;
}

void zoo_build_of(const config_t *cfg, const deck_t *deck, const dataset_t *ds, graph_t *g) {
  char err[320];
  const char *key;
  if (zoo_build_blamed(zoo_opts_of(cfg), dataset_sample_shape(ds), dataset_classes(ds), g, err, sizeof err, &key) == 0)
    return;
  const char *hint = strcmp(key, "model.zoo") == 0 ? " (hint: check the [model] sizes)" : "";
  /* images for a sequence model or the other way round: the model when the source is the default, or when
   * the command line changed the model and not the source */
  if (strcmp(key, "data.source") == 0 &&
      (deck_is_default(deck, key) || (deck_is_override(deck, "model.zoo") && !deck_is_override(deck, key))))
    key = "model.zoo";
  const char *where = deck_where(deck, key);
  if (strcmp(key, "model.zoo") == 0)
    surge_input_error("%s: [model] zoo = %s: %s%s", where ? where : "deck", cfg->zoo, err, hint);
  deck_key_error(deck, key, "%s", err);
}

optim_opts_t optim_opts_of(const config_t *cfg) {
  optim_opts_t o = *optim_opts(cfg);
  o.schedule.steps = cfg->steps;
  return o;
}

/* A decay the update's float32 rounds to 1 (from 1 - 2^-25 on). */
static int rounds_to_one(double decay) { return (float)decay >= 1.0f; }

void optim_check_trainable(const config_t *cfg, const deck_t *deck) {
  const optim_opts_t *o = optim_opts(cfg);
  const int adamw = strcmp(o->name, "adamw") == 0;
  const char *hint = "hint: at most 0.99999994";
  if (adamw && rounds_to_one(o->beta1))
    deck_key_error(deck, "train.beta1", "%.10g is 1 in float32, where AdamW divides by 1 - beta1^t = 0 (%s)",
                   o->beta1, hint);
  if (adamw && rounds_to_one(o->beta2))
    deck_key_error(deck, "train.beta2", "%.10g is 1 in float32, where AdamW divides by 1 - beta2^t = 0 (%s)",
                   o->beta2, hint);
  if (adamw && (float)o->eps < FLT_MIN)
    deck_key_error(deck, "train.eps", "%.9g is below float32's smallest normal number %.9g: it is 0 or a denormal "
                   "that [backend] flush_denormals makes 0, and 0/0 would make parameters NaN (hint: eps >= "
                   "1.17549435e-38)", o->eps, (double)FLT_MIN);
  if (!adamw && rounds_to_one(o->momentum))
    deck_key_error(deck, "train.momentum", "%.10g is 1 in float32: the momentum buffer would never decay (%s)",
                   o->momentum, hint);
  if (!adamw && o->nesterov && o->momentum == 0)
    deck_key_error(deck, "train.nesterov", "true needs momentum > 0 (PyTorch refuses it too; hint: set [train] "
                   "momentum, or nesterov = false)");
}

data_opts_t data_opts_of(const config_t *cfg) {
  data_opts_t o = *data_opts(cfg);
  o.seed = cfg->seed;
  o.sequences = zoo_takes_sequences(cfg->zoo);
  o.context = zoo_opts(cfg)->gpt.context;
  return o;
}

backend_options_t backend_opts_of(const config_t *cfg, int local_rank) {
  const backend_deck_t *d = backend_deck(cfg);
  backend_options_t o = backend_default_options();
  o.device = d->device;
  o.local_rank = local_rank;
  o.precision = strcmp(d->precision, "bf16") == 0 ? BACKEND_BF16 : BACKEND_FP32;
  o.tf32 = d->tf32;
  o.flush_denormals = d->flush_denormals;
  o.simd = strcmp(d->simd, "avx512") == 0 ? BACKEND_SIMD_AVX512
           : strcmp(d->simd, "avx2") == 0 ? BACKEND_SIMD_AVX2
           : strcmp(d->simd, "none") == 0 ? BACKEND_SIMD_NONE
                                           : BACKEND_SIMD_AUTO;
  o.gemm = strcmp(d->gemm, "blas") == 0 ? BACKEND_GEMM_BLAS : BACKEND_GEMM_AUTO;
  o.epilogues = strcmp(d->epilogues, "off") == 0    ? BACKEND_EPILOGUES_OFF
                : strcmp(d->epilogues, "bias") == 0 ? BACKEND_EPILOGUES_BIAS
                                                    : BACKEND_EPILOGUES_AUTO;
  o.bf16_activations = strcmp(d->activations, "float32") != 0;
  o.attention = strcmp(d->attention_kernels, "wmma") == 0     ? BACKEND_ATTENTION_WMMA
                : strcmp(d->attention_kernels, "wmma32") == 0 ? BACKEND_ATTENTION_WMMA32
                                                              : BACKEND_ATTENTION_AUTO;
  return o;
}

const char *backend_opts_where(const config_t *cfg, const deck_t *deck) {
  const backend_deck_t *d = backend_deck(cfg);
  return deck_where(deck, strcmp(d->simd, "auto") != 0        ? "backend.simd"
                         : strcmp(d->precision, "fp32") != 0 ? "backend.precision"
                                                             : "backend.name");
}

const backend_t *backend_open_of(const config_t *cfg, const deck_t *deck, const backend_options_t *bo, MPI_Comm job) {
  const backend_t *be = backend_open(backend_deck(cfg)->name, bo, backend_opts_where(cfg, deck), job);
  be->set_threads(backend_deck(cfg)->threads);
  return be;
}

comm_device_mode_t device_comm_of(const config_t *cfg) {
  const char *how = backend_deck(cfg)->device_comm;
  if (strcmp(how, "nccl") == 0) return COMM_DEVICE_NCCL;
  if (strcmp(how, "staged") == 0) return COMM_DEVICE_STAGED;
  return COMM_DEVICE_AUTO;
}
