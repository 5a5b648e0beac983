/* The table of layouts: each name and its builder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burst/layout.h"
#include "pipe/layout.h"
#include "core/error.h"
#include "core/names.h"
#include "layout/layout.h"

typedef struct layout_entry {
  const char *name;
  layout_t *(*build)(const layout_opts_t *o, const graph_t *g, const backend_t *be, comm_t *world);
} layout_entry_t;

static const layout_entry_t layouts[] = {
    {"dp", burst_layout_build},
    {"burst", burst_layout_build},
    {"3d", pipe_layout_build},
};
enum { NLAYOUTS = sizeof layouts / sizeof layouts[0] };

const char *layout_names(void) {
  static char names[128];
  if (!names[0])
    for (int i = 0; i < NLAYOUTS; i++) names_append(names, sizeof names, layouts[i].name);
  return names;
}

const char *layout_where(const layout_opts_t *o, const char *section_key) {
  const char *w = o->deck ? deck_where(o->deck, section_key) : NULL;
  return w ? w : "deck";
}

layout_opts_t layout_opts_of(const config_t *cfg, const deck_t *deck) {
  layout_opts_t o = {
      .plan_file = cfg->plan_file,
      .profile_file = cfg->profile_file,
      .amplification = cfg->amplification,
      .model = cfg->zoo,
      .global_batch = cfg->global_batch,
      .seed = cfg->seed,
      .deck = deck,
      .node_shared = cfg->node_shared,
      .sync = {.bucket_bytes = (size_t)(cfg->bucket_mb * 1048576.0), .overlap = cfg->overlap, .reducer = "exact"},
  };
  snprintf(o.mode, sizeof o.mode, "%s", cfg->parallel_mode);
  o.grid.tp = cfg->tp;
  o.grid.pp = cfg->pp;
  o.grid.dp = cfg->dp;
  o.grid.micro_batches = cfg->micro_batches;
  snprintf(o.grid.schedule, sizeof o.grid.schedule, "%s", cfg->pipe_schedule);
  o.grid.nstages = cfg->pipe_nstages < LAYOUT_MAX_STAGES ? cfg->pipe_nstages : LAYOUT_MAX_STAGES;
  for (int i = 0; i < o.grid.nstages; i++) o.grid.stages[i] = cfg->pipe_stages[i];
  o.grid.timeline_every = cfg->timeline_every;
  o.compress = (compress_opts_t){.cb = cfg->compress_cb, .cb_rank = cfg->compress_cb_rank, .lep = cfg->compress_lep,
                                 .epilogue_only = cfg->compress_epilogue_only, .fe = cfg->compress_fe,
                                 .sc_stages = cfg->compress_sc_stages, .dp_rank = cfg->compress_dp_rank,
                                 .warmup_fraction = cfg->compress_warmup_fraction,
                                 .min_rate = cfg->compress_min_rate, .steps = cfg->steps};
  if (o.sync.bucket_bytes < sizeof(float)) o.sync.bucket_bytes = sizeof(float);
  return o;
}

layout_t *layout_build(const layout_opts_t *o, const graph_t *g, const backend_t *be, comm_t *world) {
  for (int i = 0; i < NLAYOUTS; i++)
    if (strcmp(layouts[i].name, o->mode) == 0) {
      layout_t *l = layouts[i].build(o, g, be, world);
      l->name = layouts[i].name;
      if (!l->ops->updated) l->update_lo = 0, l->update_hi = l->local->total; /* else the builder set them */
      if (l->norm.sum == NORM_SUM_LAYOUT && (!l->ops->updated || !l->ops->norm_sum))
        surge_runtime_error("the %s layout sums the gradient norm itself but lacks updated or norm_sum (a layout bug)",
                            l->name);
      return l;
    }
  surge_input_error("[parallel] mode = %s: not a layout (accepted: %s)", o->mode, layout_names());
}

void layout_free(layout_t *l) {
  if (!l) return;
  l->ops->free(l);
}
