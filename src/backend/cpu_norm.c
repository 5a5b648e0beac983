/* "cpu" backend batch normalisation (backend.h: bn_stats .. bn_bwd) over x (N, C, HW): each (n, c)
 * plane of HW values is one contiguous loop the compiler vectorises, its float sums added into a
 * double per channel, so the rounding does not grow with N. */
#include "backend/cpu_ops.h"
#include "backend/cuda_elem.h"

/* Per-plane sums run in LANES interleaved float partial sums (one vector register; the compiler
 * vectorises the fixed-width inner loop, which a single running sum's strict order forbids), added
 * in order at the end. */
#define LANES 16

static inline float lanes_total(const float *a) {
  float t = 0.0f;
  for (int k = 0; k < LANES; k++) t += a[k];
  return t;
}

/* Sum of x[0..n). */
CPU_CLONES static float plane_sum(const float *restrict x, int n) {
  float a[LANES] = {0};
  int i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int k = 0; k < LANES; k++) a[k] += x[i + k];
  float t = lanes_total(a);
  for (; i < n; i++) t += x[i];
  return t;
}

/* Over one plane: sum of (x - m) into *s1 and of (x - m)^2 into *s2 (float sums, added in double). */
CPU_CLONES static void plane_dev(const float *restrict x, int n, float m, double *s1, double *s2) {
  float a[LANES] = {0}, b[LANES] = {0};
  int i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int k = 0; k < LANES; k++) {
      float d = x[i + k] - m;
      a[k] += d;
      b[k] += d * d;
    }
  float ta = lanes_total(a), tb = lanes_total(b);
  for (; i < n; i++) {
    float d = x[i] - m;
    ta += d;
    tb += d * d;
  }
  *s1 += ta;
  *s2 += tb;
}

/* Two passes: a first mean m, then the deviations from it, small numbers whose float sums keep
 * their digits: mean = m + s1/n, M2 = s2 - s1^2/n. */
void cpu_bn_stats(int N, int C, int HW, const float *restrict x, float *restrict part) {
  const double count = (double)N * HW;
  part[0] = (float)count;
  for (int c = 0; c < C; c++) {
    double s = 0.0, s1 = 0.0, s2 = 0.0;
    for (int n = 0; n < N; n++) s += plane_sum(x + ((size_t)n * C + c) * HW, HW);
    const float m = (float)(s / count);
    for (int n = 0; n < N; n++) plane_dev(x + ((size_t)n * C + c) * HW, HW, m, &s1, &s2);
    const double mean = (double)m + s1 / count;
    part[1 + c] = (float)mean;
    part[1 + C + c] = (float)(mean - (double)(float)mean);
    part[1 + 2 * C + c] = (float)(s2 - s1 * s1 / count);
  }
}

void cpu_bn_finish(int C, int R, const float *parts, float eps, float momentum, float *running, float *stats) {
  for (int c = 0; c < C; c++) ce_bn_finish(c, C, R, parts, eps, momentum, running, stats);
}

/* y = (x - m) a + b per element, through max(0, .) when relu (a = rstd w; x - m first, so a
 * mean far from zero cancels exactly there and not in a rounded product). */
CPU_CLONES static void plane_affine(const float *restrict x, int n, float m, float a, float b, int relu,
                                    float *restrict y) {
  if (relu)
    for (int i = 0; i < n; i++) {
      float v = (x[i] - m) * a + b;
      y[i] = v > 0.0f ? v : 0.0f;
    }
  else
    for (int i = 0; i < n; i++) y[i] = (x[i] - m) * a + b;
}

void cpu_bn_fwd(int N, int C, int HW, const float *restrict x, const float *restrict stats, const float *restrict w,
                const float *restrict b, int relu, float *restrict y) {
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++) {
      const size_t o = ((size_t)n * C + c) * HW;
      plane_affine(x + o, HW, stats[c], stats[C + c] * w[c], b[c], relu, y + o);
    }
}

/* The gradient the normalisation sees at element i: dy, masked where the fused ReLU's output ry is
 * 0 (masked, a constant of each inlined copy, so no branch stays in a loop). */
static inline __attribute__((always_inline)) float bn_g(const float *restrict dy, const float *restrict ry, size_t i,
                                                        int masked) {
  return masked && !(ry[i] > 0.0f) ? 0.0f : dy[i];
}

/* Over one plane: sum of g and of g (x - m). */
static inline __attribute__((always_inline)) void grad_sums(const float *restrict x, const float *restrict dy,
                                                            const float *restrict ry, int n, float m, int masked,
                                                            float *sg, float *sgx) {
  float a[LANES] = {0}, b[LANES] = {0};
  int i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int k = 0; k < LANES; k++) {
      float g = bn_g(dy, ry, (size_t)(i + k), masked);
      a[k] += g;
      b[k] += g * (x[i + k] - m);
    }
  float ta = lanes_total(a), tb = lanes_total(b);
  for (; i < n; i++) {
    float g = bn_g(dy, ry, (size_t)i, masked);
    ta += g;
    tb += g * (x[i] - m);
  }
  *sg = ta;
  *sgx = tb;
}

CPU_CLONES static void plane_grad_sums(const float *restrict x, const float *restrict dy, const float *restrict ry,
                                       int n, float m, float *sg, float *sgx) {
  if (ry)
    grad_sums(x, dy, ry, n, m, 1, sg, sgx);
  else
    grad_sums(x, dy, ry, n, m, 0, sg, sgx);
}

void cpu_bn_bwd_sums(int N, int C, int HW, const float *restrict x, const float *restrict stats,
                     const float *restrict dy, const float *restrict relu_y, float *restrict part) {
  for (int c = 0; c < C; c++) {
    double sg = 0.0, sgx = 0.0;
    for (int n = 0; n < N; n++) {
      const size_t o = ((size_t)n * C + c) * HW;
      float a, b;
      plane_grad_sums(x + o, dy + o, relu_y ? relu_y + o : NULL, HW, stats[c], &a, &b);
      sg += a;
      sgx += b;
    }
    part[c] = (float)sg;
    part[C + c] = (float)(sgx * stats[C + c]);
  }
}

/* dx (=, or += unless write) k g + u (x - m) + v per element, g as bn_g. */
static inline __attribute__((always_inline)) void dx_plane(const float *restrict x, const float *restrict dy,
                                                           const float *restrict ry, int n, float m, float k, float u,
                                                           float v, float *restrict dx, int masked, int write) {
  for (int i = 0; i < n; i++) {
    float d = k * bn_g(dy, ry, (size_t)i, masked) + u * (x[i] - m) + v;
    dx[i] = write ? d : dx[i] + d;
  }
}

CPU_CLONES static void plane_dx(const float *restrict x, const float *restrict dy, const float *restrict ry, int n,
                                float m, float k, float u, float v, float *restrict dx, int write) {
  if (ry && write)
    dx_plane(x, dy, ry, n, m, k, u, v, dx, 1, 1);
  else if (ry)
    dx_plane(x, dy, ry, n, m, k, u, v, dx, 1, 0);
  else if (write)
    dx_plane(x, dy, ry, n, m, k, u, v, dx, 0, 1);
  else
    dx_plane(x, dy, ry, n, m, k, u, v, dx, 0, 0);
}

void cpu_bn_bwd(int N, int C, int HW, double M, const float *restrict x, const float *restrict stats,
                const float *restrict w, const float *restrict dy, const float *restrict relu_y,
                const float *restrict sums, float *restrict dx, int dx_write) {
  for (int c = 0; c < C; c++) {
    /* w rstd (g - mg - (x - mean) rstd mgx) = k g + u (x - mean) + v */
    const double rstd = stats[C + c], k = (double)w[c] * rstd, mg = sums[c] / M, mgx = sums[C + c] / M;
    const double u = -k * rstd * mgx, v = -k * mg;
    for (int n = 0; n < N; n++) {
      const size_t o = ((size_t)n * C + c) * HW;
      plane_dx(x + o, dy + o, relu_y ? relu_y + o : NULL, HW, stats[c], (float)k, (float)u, (float)v, dx + o, dx_write);
    }
  }
}
