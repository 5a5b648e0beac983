/* The table of layouts: each name and its builder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burst/layout.h"
#include "core/error.h"
#include "core/names.h"
#include "io/deck.h"
#include "layout/layout.h"
#include "pipe/layout.h"
#include "sync/options.h"

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
  static _Thread_local char names[128];
  if (!names[0])
    for (int i = 0; i < NLAYOUTS; i++) names_append(names, sizeof names, layouts[i].name);
  return names;
}

const char *layout_where(const layout_opts_t *o, const char *section_key) {
  const char *w = o->deck ? deck_where(o->deck, section_key) : NULL;
  return w ? w : "deck";
}

int layout_is_default(const layout_opts_t *o, const char *section_key) {
  return deck_is_default(o->deck, section_key);
}

layout_opts_t layout_opts_of(const config_t *cfg, const deck_t *deck) {
  const sync_opts_t *so = sync_opts(cfg);
  layout_opts_t o = {
      .model = cfg->zoo,
      .global_batch = cfg->global_batch,
      .micro_batches = cfg->micro_batches,
      .steps = cfg->steps,
      .seed = cfg->seed,
      .cfg = cfg,
      .deck = deck,
      .node_shared = so->node_shared,
      .shard_optimizer = so->shard_optimizer,
      .sync = {.bucket_bytes = sync_bucket_bytes(so), .overlap = so->overlap, .reducer = "exact"},
  };
  snprintf(o.mode, sizeof o.mode, "%s", cfg->parallel_mode);
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
