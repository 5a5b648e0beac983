/* Each part's options from a deck (io/options.h): every [model], [train] and [data] key lands in
 * the zoo's, the optimizer's (and its schedule's) or the dataset's options, and the schema accepts
 * exactly the names the parts' own tables know (the zoo's models, the backends). */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "mux/mux.h"
#include "mux/options.h"
#include "io/config_schema.h"
#include "io/deck.h"
#include "layout/layout.h"
#include "io/options.h"
#include "io/strbuf.h"
#include "train/train.h"
#include "tap.h"

static const char *const deck_text =
    "[run]\nsteps = 77\nseed = 12345678901\n"
    "[model]\nzoo = gpt\nmlp_hidden = 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\nvgg_channels = 3,5\n"
    "vgg_fc = 9\nresnet_width = 6\nresnet_blocks = 3\nresnet_stages = 4\n"
    "norm = batchnorm\nbatchnorm = local\ndropout = 0.375\n"
    "gpt_layers = 5\ngpt_width = 48\ngpt_heads = 6\ngpt_context = 33\n"
    "[data]\nsource = synthetic\npath = some/where\ntrain_samples = 101\ntest_samples = 17\n"
    "val_fraction = 0.25\nsynthetic_samples = 999\n"
    "[train]\noptimizer = adamw\nlr = 0.3\nmomentum = 0.7\nnesterov = true\nweight_decay = 0.01\n"
    "beta1 = 0.8\nbeta2 = 0.9\neps = 1e-6\nschedule = cosine\nwarmup_steps = 7\nmin_lr = 0.03\n";

static void test_zoo_opts(const config_t *cfg) {
  zoo_opts_t o = zoo_opts_of(cfg);
  int hidden_ok = o.mlp.nhidden == 16;
  for (int i = 0; i < 16; i++) hidden_ok &= o.mlp.hidden[i] == i + 1;
  tap_ok(strcmp(o.model, "gpt") == 0 && hidden_ok, "zoo: model %s, 16 mlp widths 1..16", o.model);
  tap_ok(o.vgg.nstages == 2 && o.vgg.channels[0] == 3 && o.vgg.channels[1] == 5 && o.vgg.fc == 9,
         "zoo: vgg stages (3, 5), fc 9");
  tap_ok(o.resnet.width == 6 && o.resnet.blocks == 3 && o.resnet.stages == 4, "zoo: resnet 6 wide, 3 blocks, 4 stages");
  tap_ok(zoo_batchnorm(&o) && zoo_bn_local(&o) && o.dropout == 0.375,
         "zoo: norm = batchnorm, batchnorm = local, dropout 0.375");
  tap_ok(o.gpt.layers == 5 && o.gpt.width == 48 && o.gpt.heads == 6 && o.gpt.context == 33,
         "zoo: gpt 5 layers, width 48, 6 heads, context 33");
}

static void test_optim_opts(const config_t *cfg) {
  optim_opts_t o = optim_opts_of(cfg);
  tap_ok(strcmp(o.name, "adamw") == 0 && o.momentum == 0.7 && o.nesterov == 1 && o.weight_decay == 0.01 &&
             o.beta1 == 0.8 && o.beta2 == 0.9 && o.eps == 1e-6,
         "optim: adamw, momentum 0.7, nesterov, weight decay 0.01, betas (0.8, 0.9), eps 1e-6");
  const lr_schedule_t *s = &o.schedule;
  tap_ok(strcmp(s->kind, "cosine") == 0 && s->lr == 0.3 && s->min_lr == 0.03 && s->warmup_steps == 7 && s->steps == 77,
         "optim: cosine schedule from 0.3 to 0.03, 7 warm-up steps of 77");
  tap_ok(lr_at(s, 6) == 0.3 && lr_at(s, 77) == 0.03, "optim: the schedule reaches lr after warm-up and min_lr at the end");
}

static void test_data_opts(config_t *cfg) {
  data_opts_t o = data_opts_of(cfg);
  tap_ok(strcmp(o.source, "synthetic") == 0 && strcmp(o.path, "some/where") == 0 && o.train_samples == 101 &&
             o.test_samples == 17 && o.val_fraction == 0.25 && o.synthetic_samples == 999,
         "data: source, path, limits, val_fraction, synthetic_samples");
  tap_ok(o.seed == 12345678901ULL && o.sequences == 1 && o.context == 33,
         "data: the run's seed; a gpt model takes sequences of gpt_context tokens");
  snprintf(cfg->zoo, sizeof cfg->zoo, "resnet-mini");
  tap_ok(data_opts_of(cfg).sequences == 0, "data: a resnet-mini model takes images");
}

/* The schema's accepted values of key section.key, joined by ", ". */
static const char *schema_values(const char *section, const char *key, strbuf_t *out) {
  const cfg_key_t *k = &cfg_keys[cfg_find_key(section, key)];
  sb_clear(out);
  for (int i = 0; k->values[i]; i++) sb_printf(out, "%s%s", i ? ", " : "", k->values[i]);
  return sb_str(out);
}

static void test_names_agree(void) {
  strbuf_t b = STRBUF_INIT;
  tap_ok(strcmp(schema_values("model", "zoo", &b), zoo_names()) == 0, "schema's model.zoo values = the zoo: %s",
         zoo_names());
  tap_ok(strcmp(schema_values("backend", "name", &b), backend_names()) == 0,
         "schema's backend.name values = the backend table: %s", backend_names());
  tap_ok(strcmp(schema_values("parallel", "mode", &b), layout_names()) == 0,
         "schema's parallel.mode values = the layout table: %s", layout_names());
  const cfg_key_t *k = &cfg_keys[cfg_find_key("backend", "name")];
  int found = 1;
  for (int i = 0; k->values[i]; i++) found &= backend_find(k->values[i]) != NULL;
  tap_ok(found, "every backend the schema accepts is in the table");
  sb_free(&b);
}

static void test_backend_opts(config_t cfg) {
  backend_options_t o = backend_opts_of(&cfg, 3);
  tap_ok(o.device == -1 && o.local_rank == 3 && o.precision == BACKEND_FP32 && !o.tf32 && !o.low_priority &&
             o.flush_denormals,
         "backend: defaults: device by local rank (3), fp32, no TF32, normal priority, denormals flushed");
  tap_ok(o.epilogues == BACKEND_EPILOGUES_AUTO, "backend: epilogues = auto by default");
  backend_deck_t *bd = cfg_part_rw(&cfg, &backend_deck_options);
  const char *names[] = {"auto", "bias", "off"};
  const backend_epilogues_t modes[] = {BACKEND_EPILOGUES_AUTO, BACKEND_EPILOGUES_BIAS, BACKEND_EPILOGUES_OFF};
  for (int i = 0; i < 3; i++) {
    snprintf(bd->epilogues, sizeof bd->epilogues, "%s", names[i]);
    tap_ok(backend_opts_of(&cfg, 0).epilogues == modes[i], "backend: epilogues = %s reaches the options", names[i]);
  }
  snprintf(bd->epilogues, sizeof bd->epilogues, "auto");
  bd->flush_denormals = 0;
  tap_ok(!backend_opts_of(&cfg, 0).flush_denormals, "backend: flush_denormals = false reaches the options");
  snprintf(bd->precision, sizeof bd->precision, "bf16");
  bd->tf32 = 1;
  bd->device = 2;
  multiplex_opts_t *mo = cfg_part_rw(&cfg, &multiplex_options);
  o = trainer_backend_opts(&cfg, 0);
  tap_ok(o.device == 2 && o.precision == BACKEND_BF16 && o.tf32 && !o.low_priority,
         "backend: device 2, bf16, TF32, a job alone at normal priority");
  mo->role = MUX_ROLE_BACKGROUND;
  o = trainer_backend_opts(&cfg, 0);
  tap_ok(o.device == 2 && o.precision == BACKEND_BF16 && o.tf32 && o.low_priority && !o.in_process &&
             o.local_rank == 0,
         "backend: device 2, bf16, TF32, a background job's low priority");
  /* an in-process background: its own job's local rank (0) gives way to its foreground rank's */
  bd->device = -1;
  mo->in_process = (struct mux_shm *)&cfg; /* any channel: only its presence is read */
  mo->host_local_rank = 3;
  o = trainer_backend_opts(&cfg, 0);
  tap_ok(o.device == -1 && o.local_rank == 3 && o.low_priority && o.in_process,
         "backend: an in-process background opens its foreground rank's device (local rank 3, not its job's 0), "
         "low priority, in_process");
  mo->role = MUX_ROLE_FOREGROUND;
  o = trainer_backend_opts(&cfg, 1);
  tap_ok(o.local_rank == 1 && !o.low_priority && !o.in_process,
         "backend: the foreground beside it keeps its own local rank and priority");
}

int main(void) {
  config_t cfg;
  deck_parse(deck_text, "options.deck", 0, NULL, &cfg, NULL);
  test_zoo_opts(&cfg);
  test_optim_opts(&cfg);
  test_data_opts(&cfg);
  test_names_agree();
  test_backend_opts(cfg);
  return tap_done();
}
