/* The cuda backend's rule for when a linear forward may run through cuBLASLt's epilogues, the part
 * settled before cuBLASLt's heuristic is asked (src/backend/cuda_lt_rule.h; doc/gpu.md "cuBLASLt
 * epilogues"), on the host in every build: the setting (off: never; bias: linear_fwd's bias only),
 * linear_fwd without a bias, empty shapes, pre's ld (out % 8 for the GELU form), and every operand
 * on a 16-byte boundary (an address 4 or 8 bytes off refused, NULL operands constraining nothing);
 * the alignments reported per operand. */
#include <stdint.h>

#include "backend/cuda_lt_rule.h"
#include "tap.h"

/* buffers on a 256-byte boundary, and offsets from there */
static _Alignas(256) float x[4096], w[4096], b[512], pre[4096], y[4096];

static const char *name(lt_refusal_t r) {
  static const char *const names[] = {"taken", "setting", "no bias", "empty", "aux ld", "alignment"};
  return names[r];
}

static void expect(lt_refusal_t want, backend_epilogues_t mode, int rows, int out, int in, const float *xx,
                   const float *ww, const float *bb, const float *pp, const float *yy, const char *what) {
  int align[5];
  lt_refusal_t got = lt_rule(mode, rows, out, in, xx, ww, bb, pp, yy, align);
  tap_ok(got == want, "%s: %s (want %s)", what, name(got), name(want));
}

int main(void) {
  const backend_epilogues_t A = BACKEND_EPILOGUES_AUTO, B = BACKEND_EPILOGUES_BIAS, O = BACKEND_EPILOGUES_OFF;
  // the settings and shapes, every operand on a 256-byte boundary: mode, rows, out, in, with b, with pre
  static const struct {
    lt_refusal_t want;
    backend_epilogues_t mode;
    int rows, out, in, bias, gelu;
    const char *what;
  } cases[] = {
      {LT_TAKEN, A, 4, 64, 32, 1, 0, "auto, linear_fwd with a bias"},
      {LT_TAKEN, A, 4, 64, 32, 1, 1, "auto, linear + GELU with a bias"},
      {LT_TAKEN, A, 4, 64, 32, 0, 1, "auto, linear + GELU without a bias (GELU_AUX)"},
      {LT_TAKEN, B, 4, 64, 32, 1, 0, "bias, linear_fwd with a bias"},
      {LT_SETTING, B, 4, 64, 32, 1, 1, "bias, linear + GELU: GELU as a kernel"},
      {LT_SETTING, O, 4, 64, 32, 1, 0, "off, linear_fwd"},
      {LT_SETTING, O, 4, 64, 32, 1, 1, "off, linear + GELU"},
      {LT_NO_BIAS, A, 4, 64, 32, 0, 0, "auto, linear_fwd without a bias"},
      {LT_EMPTY, A, 0, 64, 32, 1, 0, "no rows"},
      {LT_EMPTY, A, 4, 64, 0, 1, 1, "in = 0"},
      {LT_AUX_LD, A, 4, 60, 32, 1, 1, "linear + GELU, out 60 (not a multiple of 8)"},
      {LT_TAKEN, A, 4, 60, 32, 1, 0, "linear_fwd, out 60 (no aux matrix)"},
      {LT_TAKEN, A, 3, 7, 3, 1, 0, "linear_fwd, odd sizes: for the heuristic to decide"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    expect(cases[i].want, cases[i].mode, cases[i].rows, cases[i].out, cases[i].in, x, w, cases[i].bias ? b : NULL,
           cases[i].gelu ? pre : NULL, y, cases[i].what);
  // alignment: each operand in turn 4 bytes, then 8 bytes, off its boundary; 16 bytes off is fine
  const char *names[5] = {"w", "x", "y", "b", "pre"};
  for (int off = 1; off <= 4; off *= 2)
    for (int k = 0; k < 5; k++) {
      const float *p[5] = {w, x, y, b, pre};
      p[k] += off;
      char what[80];
      snprintf(what, sizeof what, "%s %d bytes past a 256-byte boundary", names[k], 4 * off);
      expect(off < 4 ? LT_ALIGNMENT : LT_TAKEN, A, 4, 64, 32, p[1], p[0], p[3], p[4], p[2], what);
    }
  // the alignments reported, operand by operand
  int align[5];
  lt_rule(A, 4, 64, 32, x + 8, w + 1, b, NULL, y + 2, align);
  tap_ok(align[0] == 4 && align[1] == 32 && align[2] == 8 && align[3] == 256 && align[4] == 256,
         "alignments w, x, y, b, pre: %d %d %d %d %d bytes (want 4 32 8 256 256: NULL constrains nothing)",
         align[0], align[1], align[2], align[3], align[4]);
  tap_ok(lt_alignment((const void *)(uintptr_t)4096) == 256 && lt_alignment((const void *)(uintptr_t)48) == 16 &&
             lt_alignment((const void *)(uintptr_t)3) == 1,
         "lt_alignment: 4096 -> 256 (the cap), 48 -> 16, 3 -> 1");
  return tap_done();
}
