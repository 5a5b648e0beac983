/* The deck's [train] recompute (train/recompute_options.h), and its check: only the gpt has the transformer
 * blocks and attention layers it names. */
#include <stdio.h>
#include <string.h>

#include "io/config.h"
#include "train/recompute_options.h"

#define CFG_OPTS recompute_opts_t
// clang-format off: the table reads best one key per row
static const cfg_key_t rows[] = {
    CFG_ENUM_KEY("train", "recompute", mode, "none", CFG_VALUES(RECOMPUTE_NAMES),
                 "gpt: activation recomputation; block: each transformer block keeps only its input and re-runs "
                 "its forward just before its backward (its interior's buffers shared by all blocks); attention: "
                 "only the attention core's output and log-sum-exp are re-run; the parameters are bit for bit "
                 "those of none; surge-plan keeps each re-run segment on one rank set and counts its time "
                 "(doc/recompute.md)"),
};
// clang-format on

/* The mode's text. */
static const char *mode_text(const config_t *c) {
  return ((const recompute_opts_t *)cfg_part(c, &recompute_options))->mode;
}

recompute_mode_t recompute_mode_of(const config_t *c) {
  const int m = recompute_mode_named(mode_text(c)); /* (the table's values: one of the names) */
  return m < 0 ? RECOMPUTE_NONE : (recompute_mode_t)m;
}

static int check(const config_t *c, cfg_problem_t *p) {
  if (recompute_mode_of(c) == RECOMPUTE_NONE || strcmp(c->zoo, "gpt") == 0) return 0;
  snprintf(p->key, sizeof p->key, "train.recompute");
  snprintf(p->or_key, sizeof p->or_key, "model.zoo");
  snprintf(p->msg, sizeof p->msg, "recompute = %s needs the gpt's transformer blocks, but [model] zoo = %s (hint: "
           "recompute = none, or zoo = gpt)", mode_text(c), c->zoo);
  return 1;
}

const cfg_part_t recompute_options = {
    .name = "recompute", .keys = rows, .nkeys = CFG_NROWS(rows), .size = sizeof(recompute_opts_t), .check = check};
