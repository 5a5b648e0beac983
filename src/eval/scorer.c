#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "eval/eval.h"
#include "io/weights.h"

void scorer_open(scorer_t *s, const char *path, const backend_t *be, int T, int B) {
  memset(s, 0, sizeof *s);
  weights_gpt2_dims(path, &s->d);
  if (T > s->d.maxT) surge_input_error("--context %d: the model has %d positions", T, s->d.maxT);
  s->T = T > 0 ? T : s->d.maxT;
  s->B = B;
  gpt2_graph(&s->d, s->T, &s->g);
  model_init_forward(&s->m, &s->g, be, B, NULL);
  /* a host backend's slab is read in place; a device's through a host copy */
  float *host = be->host_memory ? s->m.params : slab_alloc(&s->g.params);
  weights_read(path, &s->g, host);
  if (host != s->m.params) {
    be->upload(s->m.params, host, s->g.params.total);
    slab_free(host);
  }
  size_t cells = surge_mul_size((size_t)B, (size_t)s->T, "rows x tokens");
  s->x = xcalloc(cells, sizeof *s->x);
  s->y = xcalloc(cells, sizeof *s->y);
  /* a host backend's logits are read where the model wrote them: at GPT-2's shape, batch 8, 1.5 GiB */
  s->copy = be->host_memory ? NULL : xmalloc(surge_mul_size(cells, (size_t)s->d.Vp, "logits") * sizeof *s->copy);
  s->logits = be->host_memory ? s->m.act[graph_output(&s->g)] : s->copy;
}

void scorer_close(scorer_t *s) {
  model_free(&s->m);
  graph_free(&s->g);
  free(s->x);
  free(s->y);
  free(s->copy);
  memset(s, 0, sizeof *s);
}

void scorer_forward(scorer_t *s, const int32_t *x, int n) {
  size_t cells = (size_t)n * (size_t)s->T;
  for (size_t i = 0; i < cells; i++) s->x[i] = (float)x[i];
  model_set_batch(&s->m, s->x, s->y, n);
  model_forward(&s->m, n);
  if (s->copy) s->m.be->download(s->copy, s->m.act[graph_output(&s->g)], cells * (size_t)s->d.Vp);
}

/* log p(target) of one row of logits (V real classes of Vp). */
static double log_prob(const float *z, int V, int target) {
  double most = z[0], sum = 0;
  for (int c = 1; c < V; c++) most = z[c] > most ? z[c] : most;
  for (int c = 0; c < V; c++) sum += exp((double)z[c] - most);
  return (double)z[target] - most - log(sum);
}

void scorer_rows(scorer_t *s, const int32_t *x, const int32_t *y, int n, double *sum, long *count) {
  size_t T = (size_t)s->T;
  for (int at = 0; at < n; at += s->B) {
    int k = n - at < s->B ? n - at : s->B;
    scorer_forward(s, x + (size_t)at * T, k);
    for (int r = 0; r < k; r++) {
      double lp = 0;
      long c = 0;
      for (size_t t = 0; t < T; t++) {
        int32_t target = y[(size_t)(at + r) * T + t];
        if (target < 0) continue;
        if (target >= s->d.V) surge_input_error("token %d is outside the model's vocabulary of %d", target, s->d.V);
        lp += log_prob(s->logits + ((size_t)r * T + t) * (size_t)s->d.Vp, s->d.V, target);
        c++;
      }
      sum[at + r] = lp;
      count[at + r] = c;
    }
  }
}
