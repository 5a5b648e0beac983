#include "sync/shard.h"

#include <stdlib.h>

#include "core/error.h"
#include "optim/norm.h"

/* Floats per index of t's first dimension. */
static size_t row_floats(const slab_tensor_t *t) { return t->d[0] > 0 ? t->n / (size_t)t->d[0] : t->n; }

void shard_bounds(const slab_layout_t *L, int R, size_t *bounds) {
  if (R < 1) surge_runtime_error("shard_bounds: %d shards", R);
  bounds[0] = 0;
  bounds[R] = L->total;
  int t = 0;
  for (int r = 1; r < R; r++) {
    /* n r / R without overflow for any slab a size_t holds */
    size_t ideal = L->total / (size_t)R * (size_t)r + L->total % (size_t)R * (size_t)r / (size_t)R, b = L->total;
    while (t < L->n && L->t[t].off + L->t[t].n <= ideal) t++;
    if (t < L->n) { /* the row boundary of tensor t nearest ideal */
      size_t row = row_floats(&L->t[t]), in = ideal - L->t[t].off;
      size_t down = in / row * row, up = down + row;
      b = L->t[t].off + (in - down <= up - in ? down : up);
    }
    bounds[r] = b < bounds[r - 1] ? bounds[r - 1] : b;
  }
}

void shard_parts(const size_t *bounds, int R, size_t off, size_t n, size_t *part_off, size_t *part_cnt) {
  size_t end = off + n;
  for (int r = 0; r < R; r++) {
    size_t a = bounds[r] > off ? bounds[r] : off, b = bounds[r + 1] < end ? bounds[r + 1] : end;
    if (a > end) a = end;
    part_off[r] = a - off;
    part_cnt[r] = b > a ? b - a : 0;
  }
}

void shard_rows(const slab_tensor_t *t, size_t lo, size_t hi, size_t *row_lo, size_t *row_hi) {
  size_t row = row_floats(t), a = lo > t->off ? lo : t->off, b = hi < t->off + t->n ? hi : t->off + t->n;
  if (b <= a) {
    *row_lo = *row_hi = 0;
    return;
  }
  if ((a - t->off) % row || (b - t->off) % row)
    surge_runtime_error("shard [%zu, %zu) cuts a row of tensor %s (a bug: shard_bounds aligns them)", lo, hi, t->name);
  *row_lo = (a - t->off) / row;
  *row_hi = (b - t->off) / row;
}

/* Group g's tensors concatenated in slab order (an atomic one as a single row), for shard_bounds. */
static void concatenation(const shard_plan_t *p, int g, const unsigned char *atomic, slab_layout_t *C) {
  const slab_layout_t *L = p->L;
  slab_layout_init(C);
  C->cap = L->n ? L->n : 1;
  C->t = xcalloc((size_t)C->cap, sizeof *C->t);
  for (int t = 0; t < L->n; t++) {
    if (p->group[t] != g) continue;
    slab_tensor_t *c = &C->t[C->n++];
    *c = L->t[t];
    c->off = C->total;
    if (atomic && atomic[t]) c->d[0] = 1;
    C->total += c->n;
  }
}

void shard_plan_init(shard_plan_t *p, const slab_layout_t *L, const int *group, const comm_t *groups, int ngroups,
                     const unsigned char *atomic) {
  *p = (shard_plan_t){.L = L, .ngroups = ngroups};
  p->ranks = xcalloc(ngroups ? (size_t)ngroups : 1, sizeof *p->ranks);
  p->bounds = xcalloc(ngroups ? (size_t)ngroups : 1, sizeof *p->bounds);
  p->group = xcalloc(L->n ? (size_t)L->n : 1, sizeof *p->group);
  p->voff = xcalloc(L->n ? (size_t)L->n : 1, sizeof *p->voff);
  p->ranges = xcalloc(2 * (size_t)(L->n ? L->n : 1), sizeof *p->ranges);
  size_t *at = xcalloc(ngroups ? (size_t)ngroups : 1, sizeof *at);
  for (int t = 0; t < L->n; t++) {
    if (group[t] < 0 || group[t] >= ngroups)
      surge_runtime_error("shard_plan_init: tensor %s is summed over group %d of %d (a layout bug: a sharded "
                          "optimizer updates every tensor from its group's sum)", L->t[t].name, group[t], ngroups);
    p->group[t] = group[t];
    p->voff[t] = at[group[t]];
    at[group[t]] += L->t[t].n;
  }
  free(at);
  for (int g = 0; g < ngroups; g++) {
    if (groups[g].size < 1) continue;
    p->ranks[g] = groups[g].size;
    p->bounds[g] = xcalloc((size_t)groups[g].size + 1, sizeof *p->bounds[g]);
    slab_layout_t C;
    concatenation(p, g, atomic, &C);
    shard_bounds(&C, groups[g].size, p->bounds[g]);
    slab_layout_free(&C);
  }
  int n = 0; /* this rank's piece of each tensor of its groups */
  for (int t = 0; t < L->n; t++) {
    int g = p->group[t];
    if (!p->bounds[g]) continue;
    size_t lo = p->bounds[g][groups[g].rank], hi = p->bounds[g][groups[g].rank + 1], v = p->voff[t];
    size_t a = lo > v ? lo : v, b = hi < v + L->t[t].n ? hi : v + L->t[t].n;
    if (b > a) norm_ranges_push(p->ranges, &n, L->t[t].off + (a - v), b - a);
  }
  p->nranges = norm_ranges_merge(p->ranges, n);
  for (int i = 0; i < p->nranges; i++) p->floats += p->ranges[2 * i + 1] - p->ranges[2 * i];
}

void shard_plan_free(shard_plan_t *p) {
  for (int g = 0; g < p->ngroups; g++) free(p->bounds[g]);
  free(p->bounds);
  free(p->ranks);
  free(p->group);
  free(p->voff);
  free(p->ranges);
  *p = (shard_plan_t){0};
}

void shard_plan_parts(const shard_plan_t *p, int t, size_t n, size_t *part_off, size_t *part_cnt) {
  int g = p->group[t];
  if (!p->bounds[g]) surge_runtime_error("shard_plan_parts: tensor %s of a group this rank is not in (a bug)", p->L->t[t].name);
  shard_parts(p->bounds[g], p->ranks[g], p->voff[t], n, part_off, part_cnt);
}
