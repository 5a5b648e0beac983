/* Channel concatenation: a (C0,H,W) and b (C1,H,W) -> y (C0+C1,H,W), PyTorch's torch.cat(dim=1) of
 * two parts (an Inception block's four branches: a chain of three). Per sample, y is a's n0 =
 * C0*H*W floats then b's n1, so each part is one block of columns of the (B, n0+n1) output: one
 * backend copy_cols each way per part. Backward hands each input its slice of dy. */
#include "nn/layer.h"
#include "nn/layer_common.h"

static int concat_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "concat", 2, err, n) || layer_check_image(l, "concat", err, n))
    return -1;
  const shape_t a = l->in_shape[0], b = l->in_shape[1];
  if (b.ndim != 3 || b.d[0] < 1 || a.d[1] != b.d[1] || a.d[2] != b.d[2]) {
    char sa[64], sb[64];
    snprintf(err, n, "concat: inputs %s and %s are not images of one height and width",
             shape_str(a, sa, sizeof sa), shape_str(b, sb, sizeof sb));
    return -1;
  }
  l->out = shape3(a.d[0] + b.d[0], a.d[1], a.d[2]);
  layer_set_no_params(l, 0, 0.0); /* data movement only */
  return 0;
}

static void concat_forward(const layer_t *l, const layer_ctx_t *c) {
  // y (B, n0 + n1) = [x0 (B, n0) | x1 (B, n1)]
  const size_t n0 = shape_size(l->in_shape[0]), n1 = shape_size(l->in_shape[1]), ny = n0 + n1;
  c->be->copy_cols(c->B, (int)n0, c->x[0], n0, c->y, ny, 0);
  c->be->copy_cols(c->B, (int)n1, c->x[1], n1, c->y + n0, ny, 0);
}

static void concat_backward(const layer_t *l, const layer_ctx_t *c) {
  // dx0 (B, n0) (+)= dy[:, :n0], dx1 (B, n1) (+)= dy[:, n0:]
  const size_t n0 = shape_size(l->in_shape[0]), n1 = shape_size(l->in_shape[1]), ny = n0 + n1;
  if (c->dx[0]) c->be->copy_cols(c->B, (int)n0, c->dy, ny, c->dx[0], n0, !c->dx_write[0]);
  if (c->dx[1]) c->be->copy_cols(c->B, (int)n1, c->dy + n0, ny, c->dx[1], n1, !c->dx_write[1]);
}

/* writes an input's gradient whole where asked (dx_write) */
const layer_ops_t layer_concat_ops = {"concat", concat_infer, layer_init_none, concat_forward, concat_backward,
                                      1, NULL, NULL, 0, 0, 0, 0};
