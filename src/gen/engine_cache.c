/* The cached engine: the model built for one position per sequence, so every layer but two runs
 * its own forward on (B, 1, ...) rows; the embedding adds position pos's row of the position table,
 * and attention appends this position's key and value to its cache and attends to positions 0..pos:
 *   k_cache, v_cache (B, H, positions, hs) (bfloat16 where the context says kv16: the same results, its products
 *   rounding them anyway); q (B, 1, C) from qkv (B, 3C); per sequence b and head h
 *   S_bh (1, pos+1) = q_bh K_bh^T,  P_bh = softmax(S_bh / sqrt(hs)),  y_bh (1, hs) = P_bh V_bh. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "gen/engine.h"
#include "nn/model.h"

typedef struct cache_engine {
  gen_engine_t base;
  const gen_model_t *gm;
  const backend_t *be;
  graph_t g;       /* the model at T = 1 */
  model_t m;       /* its buffers for B sequences; the parameters uploaded */
  int positions;   /* the most a sequence takes (prompt and new tokens), at most the context */
  void **k, **v;   /* per node: an attention node's key and value cache (B, H, positions, hs), else NULL: floats,
                    * or bfloat16 where base.kv16. Each head's rows lie together: a product reads one run of
                    * memory (in rows of C, (B, context, C), it read 64 of every 768 values and ran 3.5-4.3x slower
                    * at GPT-2 124M's context, bench/bench_gemm's cache table) */
  float *s, *p;    /* (B, H, positions) scores and probabilities of the widest attention */
} cache_engine_t;

static void embed_at(cache_engine_t *e, int i, int pos) {
  const layer_t *l = &e->g.l[i];
  model_t *m = &e->m;
  int C = l->out.d[1];
  const float *wte = model_tensor(m->params, &e->g, l->param[0]);
  const float *wpe = l->no_positions ? NULL : model_tensor(m->params, &e->g, l->param[1]) + (size_t)pos * C;
  e->be->embed_fwd(e->base.B, 1, C, m->in[i][0], l->vocab_lo, l->vocab, wte, wpe, m->act[i]);
}

/* Position pos of sequence b in a cache (B, H, positions, hs) = src (C = H hs): floats, or their bfloat16 */
static void cache_put(const cache_engine_t *e, void *cache, int b, int pos, int H, int hs, const float *src) {
  const size_t Tm = (size_t)e->positions, at = (size_t)b * H * Tm * hs + (size_t)pos * hs;
  if (!e->base.kv16) {
    e->be->copy_cols(H, hs, src, (size_t)hs, (float *)cache + at, Tm * hs, 0);
    return;
  }
  for (int h = 0; h < H; h++) e->be->to_bf16((size_t)hs, src + (size_t)h * hs, (uint16_t *)cache + at + h * Tm * hs);
}

/* gemm_grid whose B is a cache (backend.h: gemm_grid_b16 reads the bfloat16 one) */
static void cache_gemm(const cache_engine_t *e, int tb, int M, int N, int K, const float *A, int lda, const void *cache,
                       int ldb, float *C, int ldc, const gemm_grid_t *g) {
  if (e->base.kv16) e->be->gemm_grid_b16(0, tb, M, N, K, 1.0f, A, lda, cache, ldb, 0.0f, C, ldc, g);
  else e->be->gemm_grid(0, tb, M, N, K, 1.0f, A, lda, cache, ldb, 0.0f, C, ldc, g);
}

static void attend_at(cache_engine_t *e, int i, int pos) {
  const layer_t *l = &e->g.l[i];
  const backend_t *be = e->be;
  int B = e->base.B, Tm = e->positions, ld = l->in_shape[0].d[1], C = ld / 3, H = l->heads, hs = C / H, L = pos + 1;
  const float *qkv = e->m.in[i][0]; /* (B, 3C) */
  float *y = e->m.act[i];
  for (int b = 0; b < B; b++) {
    cache_put(e, e->k[i], b, pos, H, hs, qkv + (size_t)b * ld + C);
    cache_put(e, e->v[i], b, pos, H, hs, qkv + (size_t)b * ld + 2 * C);
  }
  const size_t head = (size_t)Tm * hs, rows = (size_t)H * L; /* a head's cache; S's rows of a sequence */
  // S_bh (1, L) = q_bh (1, hs) K_bh (L, hs)^T: S (B, H, L)
  gemm_grid_t g = {{B, H}, {(size_t)ld, (size_t)hs}, {H * head, head}, {rows, (size_t)L}};
  cache_gemm(e, 1, 1, L, hs, qkv, ld, e->k[i], hs, e->s, L, &g);
  be->softmax_rows(B * H, L, 1.0f / sqrtf((float)hs), e->s, e->p);
  // y_bh (1, hs) = P_bh (1, L) V_bh (L, hs), into columns h*hs.. of y (B, C)
  g = (gemm_grid_t){{B, H}, {rows, (size_t)L}, {H * head, head}, {(size_t)C, (size_t)hs}};
  cache_gemm(e, 0, 1, hs, L, e->p, L, e->v[i], hs, y, C, &g);
}

static void cache_step(gen_engine_t *base, const float *tok, int pos, float *logits) {
  cache_engine_t *e = (cache_engine_t *)base;
  if (pos < 0 || pos >= e->positions)
    surge_runtime_error("position %d outside the engine's %d positions (a bug)", pos, e->positions);
  model_t *m = &e->m;
  e->be->upload(m->act[0], tok, (size_t)base->B);
  for (int i = 1; i < e->g.n; i++) {
    layer_kind_t kind = e->g.l[i].kind;
    if (kind == LAYER_EMBED) embed_at(e, i, pos);
    else if (kind == LAYER_ATTENTION) attend_at(e, i, pos);
    else model_forward_node(m, i, 0, base->B);
  }
  e->be->download(logits, m->act[graph_output(&e->g)], (size_t)base->B * base->V);
}

static void cache_free(gen_engine_t *base) {
  cache_engine_t *e = (cache_engine_t *)base;
  for (int i = 0; i < e->g.n; i++) {
    if (e->k[i]) e->be->free((float *)e->k[i]);
    if (e->v[i]) e->be->free((float *)e->v[i]);
  }
  if (e->s) e->be->free(e->s);
  if (e->p) e->be->free(e->p);
  free(e->k), free(e->v);
  model_free(&e->m);
  graph_free(&e->g);
  free(e);
}

gen_engine_t *gen_engine_cache(const gen_model_t *gm, const backend_t *be, int B, int positions, int half) {
  if (positions < 1 || positions > gm->context)
    surge_runtime_error("a key/value cache of %d positions for a context of %d (a bug)", positions, gm->context);
  cache_engine_t *e = xcalloc(1, sizeof *e);
  e->base = (gen_engine_t){.name = "cache", .B = B, .V = gm->vocab_out, .step = cache_step, .free = cache_free};
  e->gm = gm;
  e->positions = positions;
  e->be = be;
  gen_model_graph(gm, 1, &e->g);
  /* a host backend reads the model's own slab in place; a device gets a copy */
  model_init_forward(&e->m, &e->g, be, B, be->host_memory ? gm->params : NULL);
  if (!be->host_memory) be->upload(e->m.params, gm->params, gm->g.params.total);
  /* every product has B rows, a few: where the backend reads the weights once for them (cpu in bf16), it
   * reads a bfloat16 copy, half the bytes (a token's time is mostly reading the weights) */
  if ((half & GEN_WEIGHTS16) && B <= be->context()->weights16_rows) e->base.weights16 = model_weights16(&e->m);
  /* the keys and values in bfloat16 where the products read them so anyway: half the cache, the same results */
  e->base.kv16 = (half & GEN_KV16) && be->context()->kv16;
  e->k = xcalloc((size_t)e->g.n, sizeof *e->k);
  e->v = xcalloc((size_t)e->g.n, sizeof *e->v);
  size_t widest = 1;
  for (int i = 0; i < e->g.n; i++) {
    const layer_t *l = &e->g.l[i];
    if (l->kind != LAYER_ATTENTION) continue;
    size_t n = surge_mul_size(surge_mul_size((size_t)B, (size_t)positions, "key/value cache"),
                              (size_t)l->in_shape[0].d[1] / 3, "key/value cache");
    e->base.cache_bytes += 2 * n * (e->base.kv16 ? sizeof(uint16_t) : sizeof(float));
    e->k[i] = e->base.kv16 ? (void *)backend_alloc_bf16(be, n) : be->alloc(n);
    e->v[i] = e->base.kv16 ? (void *)backend_alloc_bf16(be, n) : be->alloc(n);
    size_t s = (size_t)B * l->heads * positions;
    if (s > widest) widest = s;
  }
  e->s = be->alloc(widest);
  e->p = be->alloc(widest);
  return &e->base;
}
