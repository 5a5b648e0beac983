#include "train/state.h"

#include <stdlib.h>

#include "core/error.h"
#include "io/checkpoint.h"

/* Host buffers shaped like t's state (moments only where the optimizer has them). */
static ckpt_state_t host_state(const trainer_t *t) {
  size_t n = t->g.params.total;
  ckpt_state_t s = {.g = &t->g};
  s.params = xcalloc(n ? n : 1, sizeof(float));
  if (t->opt.m) s.m = xcalloc(n ? n : 1, sizeof(float));
  if (t->opt.v) s.v = xcalloc(n ? n : 1, sizeof(float));
  return s;
}

static void free_state(ckpt_state_t *s) {
  free(s->params);
  free(s->m);
  free(s->v);
}

void trainer_checkpoint(trainer_t *t, const char *deck_text, char *written, size_t written_len) {
  const backend_t *be = t->be;
  size_t n = t->g.params.total;
  trainer_sync_replicas(t);
  ckpt_state_t s = host_state(t);
  be->download(s.params, t->m.params, n);
  if (s.m) be->download(s.m, t->opt.m, n);
  if (s.v) be->download(s.v, t->opt.v, n);
  s.opt_t = t->opt.t;
  s.step = t->step;
  checkpoint_write(t->cfg.ckpt_dir, &s, &t->cfg, deck_text, t->world, written, written_len);
  free_state(&s);
}

int trainer_resume(trainer_t *t, char *from, size_t from_len) {
  if (!checkpoint_latest(t->cfg.ckpt_dir, from, from_len, t->world)) return 0;
  const backend_t *be = t->be;
  size_t n = t->g.params.total;
  ckpt_state_t s = host_state(t);
  checkpoint_read(from, &s, &t->cfg, t->world);
  be->upload(t->m.params, s.params, n);
  if (s.m) be->upload(t->opt.m, s.m, n);
  if (s.v) be->upload(t->opt.v, s.v, n);
  t->opt.t = s.opt_t;
  t->step = s.step;
  free_state(&s);
  return 1;
}
