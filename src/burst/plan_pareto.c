/* Pareto sets of (iteration time, rank-time) points with back-pointers (plan_impl.h): the values the
 * frontier search carries along the graph. Every operation keeps its result a front (time
 * ascending, rank-time strictly descending); a point whose rank-time is within a relative 1e-12 of
 * a faster one's counts as beaten (rounding noise would otherwise keep twins). */
#include <stdlib.h>
#include <string.h>

#include "burst/plan_impl.h"
#include "core/error.h"

#define PF_REL 1e-12

void pf_push(pf_set_t *s, double t, double r, int k, int i, int j) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4;
    s->p = xrealloc(s->p, (size_t)s->cap * sizeof *s->p);
  }
  s->p[s->n++] = (pf_pt_t){t, r, k, i, j};
}

void pf_clear(pf_set_t *s) { s->n = 0; }

void pf_free(pf_set_t *s) {
  free(s->p);
  memset(s, 0, sizeof *s);
}

static int cmp_pt(const void *a, const void *b) {
  const pf_pt_t *p = a, *q = b;
  if (p->t != q->t) return p->t < q->t ? -1 : 1;
  return (p->r > q->r) - (p->r < q->r);
}

/* Whether a point of rank-time r, after points down to best_r, is on the front. */
static inline int improves(double r, double best_r, int any) { return !any || r < best_r * (1 - PF_REL); }

void pf_prune(pf_set_t *s, int keep_one) {
  if (s->n < 2) return;
  qsort(s->p, (size_t)s->n, sizeof *s->p, cmp_pt);
  int kept = 0;
  for (int x = 0; x < s->n; x++)
    if (improves(s->p[x].r, kept ? s->p[kept - 1].r : 0, kept)) s->p[kept++] = s->p[x];
  s->n = keep_one ? 1 : kept;
}


/* acc := front of acc and b shifted by (dt, dr). b's points enter with their back-pointers (how =
 * PF_TAG_KEEP) or with (k, index in b, fixed) (PF_TAG_I) or (k, fixed, index in b) (PF_TAG_J). */
static void merge_front(pf_set_t *acc, const pf_set_t *b, double dt, double dr, int k, int fixed, int how,
                        int keep_one, pf_set_t *tmp) {
  if (b->n == 0) return;
  tmp->n = 0;
  int x = 0, y = 0, any = 0;
  double best = 0;
  while (x < acc->n || y < b->n) {
    pf_pt_t q;
    int from_b;
    if (y == b->n)
      from_b = 0;
    else if (x == acc->n)
      from_b = 1;
    else {
      double tb = b->p[y].t + dt, rb = b->p[y].r + dr;
      from_b = tb < acc->p[x].t || (tb == acc->p[x].t && rb < acc->p[x].r);
    }
    if (from_b) {
      q = b->p[y];
      q.t += dt;
      q.r += dr;
      if (how == PF_TAG_I) q.k = k, q.i = y, q.j = fixed;
      if (how == PF_TAG_J) q.k = k, q.i = fixed, q.j = y;
      y++;
    } else {
      q = acc->p[x++];
    }
    if (improves(q.r, best, any)) {
      pf_push(tmp, q.t, q.r, q.k, q.i, q.j);
      best = q.r;
      any = 1;
      if (keep_one) break;
    }
  }
  pf_set_t swap = *acc;
  *acc = *tmp;
  *tmp = swap;
}

void pf_merge_shifted(pf_set_t *acc, const pf_set_t *b, double dt, double dr, int k, int j, int keep_one,
                      pf_set_t *tmp) {
  merge_front(acc, b, dt, dr, k, j, PF_TAG_I, keep_one, tmp);
}

void pf_merge_sum(pf_set_t *acc, const pf_set_t *a, const pf_set_t *b, double dt, double dr, int k, int keep_one,
                  pf_set_t *tmp) {
  if (a->n == 0 || b->n == 0) return;
  /* one stream of the larger set per point of the smaller, and acc as it is */
  int small_a = a->n <= b->n, ns = small_a ? a->n : b->n;
  if (keep_one) ns = 1; /* the fastest of a plus the fastest of b is the fastest sum */
  pf_stream_t *st = xmalloc((size_t)(ns + 1) * sizeof *st);
  for (int x = 0; x < ns; x++) {
    const pf_pt_t *q = small_a ? &a->p[x] : &b->p[x];
    st[x] = (pf_stream_t){small_a ? b : a, q->t + dt, q->r + dr, k, x, small_a ? PF_TAG_J : PF_TAG_I, 0};
  }
  st[ns] = (pf_stream_t){acc, 0, 0, 0, 0, PF_TAG_KEEP, 0};
  pf_front_of(st, ns + 1, tmp, keep_one);
  free(st);
  pf_set_t swap = *acc;
  *acc = *tmp;
  *tmp = swap;
}

void pf_merge_max(pf_set_t *acc, const pf_set_t *a, const pf_set_t *b, int k, int keep_one, pf_set_t *tmp) {
  if (a->n == 0 || b->n == 0) return;
  /* Sweep the times of both fronts in order: at time T the least rank-time of each within T is its
   * last point at or before T (fronts: rank-time falls as time grows). */
  pf_set_t c = {0, 0, NULL};
  int x = -1, y = -1;
  while (x + 1 < a->n || y + 1 < b->n) {
    int take_a = y + 1 == b->n || (x + 1 < a->n && a->p[x + 1].t <= b->p[y + 1].t);
    if (take_a)
      x++;
    else
      y++;
    if (x < 0 || y < 0) continue;
    double t = take_a ? a->p[x].t : b->p[y].t;
    double r = a->p[x].r + b->p[y].r;
    if (c.n && t == c.p[c.n - 1].t) c.n--; /* the same time again: the later pair is leaner */
    if (!c.n || r < c.p[c.n - 1].r * (1 - PF_REL)) pf_push(&c, t, r, k, x, y);
  }
  merge_front(acc, &c, 0, 0, 0, 0, PF_TAG_KEEP, keep_one, tmp);
  pf_free(&c);
}

/* ---- the front of many shifted fronts at once ----
 * A heap of streams ordered by their current point's (time, rank-time): the smallest is either on
 * the front (it beats everything before it) or beaten, and then its stream jumps by binary search
 * to its first point leaner than the best so far (a front's rank-time falls along it). The work
 * grows with the front and the streams, not with all the pairs. */

typedef struct heap_item {
  double t, r; /* the stream's current point, shifted */
  int x;       /* the stream */
} heap_item_t;

static inline int item_less(const heap_item_t *a, const heap_item_t *b) {
  return a->t < b->t || (a->t == b->t && a->r < b->r);
}

static void sift_down(heap_item_t *h, int n, int x) {
  heap_item_t it = h[x];
  for (;;) {
    int l = 2 * x + 1, m = l;
    if (l >= n) break;
    if (l + 1 < n && item_less(&h[l + 1], &h[l])) m = l + 1;
    if (!item_less(&h[m], &it)) break;
    h[x] = h[m];
    x = m;
  }
  h[x] = it;
}

static inline void item_of(heap_item_t *it, const pf_stream_t *s, int x) {
  it->t = s->s->p[s->pos].t + s->dt;
  it->r = s->s->p[s->pos].r + s->dr;
  it->x = x;
}

void pf_front_of(pf_stream_t *st, int n, pf_set_t *out, int keep_one) {
  out->n = 0;
  heap_item_t *heap = xmalloc((size_t)(n ? n : 1) * sizeof *heap);
  int size = 0;
  for (int x = 0; x < n; x++) {
    st[x].pos = 0;
    if (st[x].s->n) item_of(&heap[size++], &st[x], x);
  }
  for (int x = size / 2 - 1; x >= 0; x--) sift_down(heap, size, x);
  int any = 0;
  double best = 0;
  while (size) {
    pf_stream_t *s = &st[heap[0].x];
    if (improves(heap[0].r, best, any)) {
      const pf_pt_t *q = &s->s->p[s->pos];
      int i = s->how == PF_TAG_I ? s->pos : s->how == PF_TAG_J ? s->fixed : q->i;
      int j = s->how == PF_TAG_I ? s->fixed : s->how == PF_TAG_J ? s->pos : q->j;
      pf_push(out, heap[0].t, heap[0].r, s->how == PF_TAG_KEEP ? q->k : s->k, i, j);
      best = heap[0].r;
      any = 1;
      if (keep_one) break;
      s->pos++;
    } else { /* jump to the stream's first point leaner than best */
      double below = best * (1 - PF_REL) - s->dr;
      const pf_pt_t *p = s->s->p;
      int lo = s->pos + 1, hi = s->s->n;
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (p[mid].r < below)
          hi = mid;
        else
          lo = mid + 1;
      }
      s->pos = lo;
    }
    if (s->pos < s->s->n)
      item_of(&heap[0], s, heap[0].x);
    else
      heap[0] = heap[--size];
    sift_down(heap, size, 0);
  }
  free(heap);
}

void pf_thin(pf_set_t *s, double eps) {
  if (s->n < 3 || !(eps > 0)) return;
  int kept = 1;
  for (int x = 1; x < s->n; x++) {
    const pf_pt_t *last = &s->p[kept - 1];
    if (x == s->n - 1 || last->r > (1 + eps) * s->p[x].r) s->p[kept++] = s->p[x];
  }
  s->n = kept;
}
