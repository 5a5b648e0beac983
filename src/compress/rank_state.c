#include "compress/rank_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void rank_state_init(rank_state_t *s, const char *group, int n, const char *const *names, float *const *dev,
                     const size_t *len, const double *counter_max, const backend_t *be, comm_t *job) {
  memset(s, 0, sizeof *s);
  s->be = be;
  s->n = n;
  s->dev = xcalloc((size_t)n + 1, sizeof *s->dev);
  s->host = xcalloc((size_t)n + 1, sizeof *s->host);
  s->len = xcalloc((size_t)n + 1, sizeof *s->len);
  s->tensor = xcalloc((size_t)n + 1, sizeof *s->tensor);
  /* every rank's lengths: (ranks, n), this rank's row filled */
  size_t ranks = (size_t)job->size;
  uint64_t *all = xcalloc(surge_mul_size(ranks, (size_t)n + 1, "rank state lengths"), sizeof *all);
  for (int i = 0; i < n; i++) all[(size_t)job->rank * (size_t)n + (size_t)i] = len[i];
  comm_allreduce_sum_u64(job, all, (int)(ranks * (size_t)n), TRAFFIC_OTHER);
  snprintf(s->region.group, sizeof s->region.group, "%s", group);
  s->region.t = xcalloc((size_t)n + 1, sizeof *s->region.t);
  for (int i = 0; i < n; i++) {
    uint64_t before = 0, total = 0;
    for (size_t r = 0; r < ranks; r++) {
      if ((int)r < job->rank) before += all[r * (size_t)n + (size_t)i];
      total += all[r * (size_t)n + (size_t)i];
    }
    s->len[i] = len[i];
    s->dev[i] = len[i] ? dev[i] : NULL;
    s->tensor[i] = -1;
    if (total == 0) continue;
    if (len[i]) s->host[i] = be->host_memory ? dev[i] : xcalloc(len[i], sizeof(float));
    s->tensor[i] = s->region.n;
    state_tensor_t *t = &s->region.t[s->region.n++];
    snprintf(t->name, sizeof t->name, "%s", names[i]);
    t->ndim = 1;
    t->dims[0] = (size_t)total;
    t->start[0] = len[i] ? (size_t)before : 0;
    t->count[0] = len[i];
    t->replica = 0;
    t->replicas = 1;
    t->data = s->host[i];
    t->finite = 1;
    t->counter = counter_max && counter_max[i] >= 0;
    t->counter_max = t->counter ? counter_max[i] : 0;
  }
  free(all);
}

void rank_state_free(rank_state_t *s) {
  for (int i = 0; i < s->n && !s->be->host_memory; i++) free(s->host[i]);
  free(s->dev);
  free(s->host);
  free(s->len);
  free(s->tensor);
  free(s->region.t);
  memset(s, 0, sizeof *s);
}

state_region_t *rank_state_region(rank_state_t *s) {
  for (int i = 0; i < s->n && !s->be->host_memory; i++)
    if (s->len[i] && s->tensor[i] >= 0) s->be->download(s->host[i], s->dev[i], s->len[i]);
  return &s->region;
}

void rank_state_loaded(rank_state_t *s) {
  for (int i = 0; i < s->n && !s->be->host_memory; i++)
    if (s->len[i] && s->tensor[i] >= 0) s->be->upload(s->dev[i], s->host[i], s->len[i]);
}
