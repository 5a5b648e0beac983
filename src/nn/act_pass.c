/* Activations that live only through the forward pass (act_pass.h). */
#include "nn/act_pass.h"

#include "core/error.h"

/* Whether no backward reads node i's output, and every reader runs on its samples; *last = its last reader. */
static int read_by_forward_only(const model_t *m, int i, int (*allowed)(void *arg, int node, int next), void *arg,
                               int *last) {
  const graph_t *g = m->g;
  const layer_ops_t *ops = layer_ops_of(g->l[i].kind);
  if (!ops->output_unread || ops->forward_finish) return 0;
  *last = 0;
  for (int j = i + 1; j < g->n; j++)
    for (int k = 0; k < g->l[j].nin; k++) {
      if (g->l[j].in[k] != i) continue;
      if (!layer_ops_of(g->l[j].kind)->inputs_unread || m->fused[j] != 0 || !allowed(arg, i, j)) return 0;
      *last = j;
    }
  return *last > 0;
}

int act_pass_plan(const model_t *m, int (*allowed)(void *arg, int node, int next), void *arg, const int *held,
                  int *pass) {
  const graph_t *g = m->g;
  int n = 0, busy_until = 0; /* the last reader of the node passing before */
  for (int i = 0; i < g->n; i++) {
    int last = 0;
    pass[i] = allowed && i > 0 && i != graph_output(g) && i > busy_until && m->fused[i] == 0 && m->epi[i] == 0 &&
              !held[i] && !model_segment_shared(m, i) && read_by_forward_only(m, i, allowed, arg, &last);
    if (!pass[i]) continue;
    busy_until = last;
    n++;
  }
  return n;
}

/* Whether node j passes its output through the shared buffer. */
static int passes(const model_t *m, int j) { return m->act_pass && (m->pooled[j] & MODEL_POOLED_ACT); }

void act_pass_wrote(model_t *m, int j, int off, int B) {
  if (passes(m, j)) m->act_pass_of = (model_rows_t){j, off, B};
}

void act_pass_check(const model_t *m, int i, int src, int off, int B) {
  const model_rows_t h = m->act_pass_of;
  if (passes(m, src) && (h.node != src || h.off > off || off + B > h.off + h.B))
    surge_runtime_error("node %d reads rows %d..%d of node %d's output, which passed through the shared buffer, but "
                        "the buffer holds rows %d..%d of node %d (a bug: act_pass_plan assumed the forward's node "
                        "order)", i, off, off + B - 1, src, h.off, h.off + h.B - 1, h.node);
}
