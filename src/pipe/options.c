/* The deck's keys of the 3d layout ([parallel], [log] timeline_every; doc/3d.md), and the checks
 * that hold [compress] to a 3d grid with the axes its techniques need. Its micro-batches are [train]
 * micro_batches, every layout's key (io/config_schema.c). */
#include "pipe/options.h"

#include <stdio.h>
#include <string.h>

#include "compress/options.h"
#include "io/config.h"
#include "io/deck.h"

#define CFG_OPTS pipe_opts_t
// clang-format off: the table reads best one key per row
static const cfg_key_t rows[] = {
    CFG_INT_KEY("parallel", "tp", tp, "1", 1, 4096,
                "3d: tensor-parallel ranks per pipeline stage (must divide gpt_heads and the vocabulary)"),
    CFG_INT_KEY("parallel", "pp", pp, "1", 1, 4096, "3d: pipeline stages (at most gpt_layers)"),
    CFG_INT_KEY("parallel", "dp", dp, "1", 1, 1000000,
                "3d: data-parallel replicas of the pipeline (tp * pp * dp = the rank count)"),
    CFG_ENUM_KEY("parallel", "schedule", schedule, "1f1b", CFG_VALUES("1f1b", "gpipe"),
                 "3d: pipeline schedule; 1f1b: warm-up forwards, then one forward and one backward alternating "
                 "(at most pp - s micro-batches held on stage s); gpipe: all forwards, then all backwards"),
    CFG_LIST_KEY("parallel", "stages", stages, nstages, "0", 0, 4096,
                 "3d: transformer blocks per pipeline stage, first to last (pp entries, each at least 1, summing "
                 "to gpt_layers); a single 0: balanced by training FLOPs (with [train] recompute, the re-run "
                 "forwards' too)"),
    CFG_BOOL_KEY("parallel", "scatter_gather", scatter_gather, "true",
                 "3d: each tensor-parallel rank sends only its 1/tp chunk of an activation (to the next "
                 "stage) or an exact gradient (to the previous), whose ranks all-gather the chunks "
                 "(Megatron-LM's default); false: every rank sends the whole tensor"),
    CFG_INT_KEY("log", "timeline_every", timeline_every, "1", 0, CFG_MAX_COUNT,
                "3d: record every rank's pipeline events (/pipeline/events) every N steps (0: never)"),
};
// clang-format on

/* The first key of [compress] named in keys (NULL-terminated; all of them when keys is NULL) that
 * holds another value than its default, or NULL. The name lives in buf. */
static const char *changed_compress_key(const config_t *c, const char *const *keys, char *buf, size_t size) {
  for (int i = 0; keys ? keys[i] != NULL : i < compress_options.nkeys; i++) {
    snprintf(buf, size, "compress.%s", keys ? keys[i] : compress_options.keys[i].key);
    if (deck_key_changed(c, buf)) return buf;
  }
  return NULL;
}

/* [compress] keys apply to the axes of a 3d layout: the pipeline ones (cb, fe) to pp > 1, the
 * data-parallel ones to dp > 1; sc_stages counts stages. A key left at its default never fails. */
static int check(const config_t *c, cfg_problem_t *p) {
  static const char *const pipe_keys[] = {"cb", "cb_rank", "lep", "epilogue_only", "fe", NULL};
  static const char *const dp_keys[] = {"sc_stages", "dp_rank", "warmup_fraction", NULL};
  char *key = p->key; /* the blamed key */
  const pipe_opts_t *g = pipe_opts(c);
  int sc = compress_opts(c)->sc_stages;
  if (strcmp(c->parallel_mode, "3d") != 0) {
    if (!changed_compress_key(c, NULL, key, sizeof p->key)) return 0;
    snprintf(p->msg, sizeof p->msg, "[compress] applies to 3d runs, but [parallel] mode = %s (hint: remove the "
             "[compress] keys, or use mode = 3d: its pipeline (pp > 1) for cb and fe, its data parallelism "
             "(dp > 1) for sc_stages)", c->parallel_mode);
  } else if (g->pp == 1 && changed_compress_key(c, pipe_keys, key, sizeof p->key)) {
    snprintf(p->msg, sizeof p->msg, "the 3d layout has no pipeline ([parallel] pp = 1): no activation gradient "
             "or embedding crosses stages (hint: pp > 1, or remove the key)");
  } else if (g->dp == 1 && changed_compress_key(c, dp_keys, key, sizeof p->key)) {
    snprintf(p->msg, sizeof p->msg, "the 3d layout has no data parallelism ([parallel] dp = 1): there is no "
             "data-parallel gradient sum to compress (hint: dp > 1, or remove the key)");
  } else if (sc > g->pp) {
    snprintf(key, sizeof p->key, "compress.sc_stages");
    snprintf(p->msg, sizeof p->msg, "sc_stages = %d, but the pipeline has %d stage%s ([parallel] pp) (hint: 0 .. "
             "%d; stages below sc_stages are compressed)", sc, g->pp, g->pp == 1 ? "" : "s", g->pp);
  } else {
    return 0;
  }
  return 1;
}

const cfg_part_t pipe_options = {
    .name = "3d", .keys = rows, .nkeys = CFG_NROWS(rows), .size = sizeof(pipe_opts_t), .check = check};
