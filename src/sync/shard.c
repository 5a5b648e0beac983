#include "sync/shard.h"

#include "core/error.h"

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
