/* The input node: holds the batch (images or token ids); no computation. */
#include "nn/layer.h"

static int input_infer(layer_t *l, char *err, size_t n) {
  (void)l;
  (void)err;
  (void)n;
  return 0;
}
static void input_init(const layer_t *l, float *const *w, rng_t *r, init_scheme_t s) {
  (void)l, (void)w, (void)r, (void)s;
}
static void input_pass(const layer_t *l, const layer_ctx_t *c) { (void)l, (void)c; }

const layer_ops_t layer_input_ops = {"input", input_infer, input_init, input_pass, input_pass, 0, NULL, NULL,
                                     0,       0,           0,          0};
