/* The ref backend's fused forms: the unfused ops of ref's table in sequence (ref_fused.h). */
#include "backend/ref_fused.h"

#include "backend/backend.h"

// pre (rows,out) = x (rows,in) w^T + b; y = gelu(pre)
void ref_linear_gelu_fwd(int rows, int out, int in, const float *x, const float *w, const uint16_t *w16, const float *b,
                         float *pre, float *y, float *ws, size_t ws_n) {
  backend_ref.linear_fwd(rows, out, in, x, w, w16, b, pre, ws, ws_n);
  backend_ref.gelu_fwd((size_t)rows * (size_t)out, pre, y);
}

// dpre (rows,cols) = dy gelu'(pre); db (cols) += column sums of dpre
void ref_gelu_bias_bwd(int rows, int cols, const float *pre, const float *dy, float *dpre, float *db) {
  backend_ref.gelu_bwd((size_t)rows * (size_t)cols, pre, dy, dpre, 1);
  if (db) backend_ref.bias_grad_rows(rows, cols, dpre, db);
}

// sum (N,rows,C) = a + b; y = layernorm(sum), stats (N,2,rows)
void ref_add_layernorm_fwd(int N, int rows, int C, const float *a, const float *b, const float *w, const float *bias,
                           float eps, float *sum, float *y, float *stats) {
  backend_ref.add((size_t)N * (size_t)rows * (size_t)C, a, b, sum);
  backend_ref.layernorm_fwd(N, rows, C, sum, w, bias, eps, y, stats);
}
