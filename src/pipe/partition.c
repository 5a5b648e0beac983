#include "pipe/partition.h"

#include <stdlib.h>

#include "core/error.h"

/* Cost of blocks [a, b) as stage s of PP (prefix: prefix sums of cost). */
static double stage_cost(const double *prefix, int a, int b, int s, int PP, double head, double tail) {
  return prefix[b] - prefix[a] + (s == 0 ? head : 0) + (s == PP - 1 ? tail : 0);
}

void pipe_partition(const double *cost, int L, double head, double tail, int PP, int *count) {
  double *prefix = xcalloc((size_t)L + 1, sizeof *prefix);
  for (int i = 0; i < L; i++) prefix[i + 1] = prefix[i] + cost[i];
  // best[s][b]: the least largest cost of stages 0..s holding blocks [0, b); cut[s][b]: where stage s begins
  double *best = xcalloc((size_t)PP * (size_t)(L + 1), sizeof *best);
  int *cut = xcalloc((size_t)PP * (size_t)(L + 1), sizeof *cut);
#define BEST(s, b) best[(size_t)(s) * (size_t)(L + 1) + (size_t)(b)]
#define CUT(s, b) cut[(size_t)(s) * (size_t)(L + 1) + (size_t)(b)]
  for (int b = 1; b <= L; b++) BEST(0, b) = stage_cost(prefix, 0, b, 0, PP, head, tail);
  for (int s = 1; s < PP; s++)
    for (int b = s + 1; b <= L; b++) {
      BEST(s, b) = -1;
      for (int a = b - 1; a >= s; a--) { /* stage s holds [a, b); later a first: earlier stages get more */
        double c = stage_cost(prefix, a, b, s, PP, head, tail), m = BEST(s - 1, a) > c ? BEST(s - 1, a) : c;
        if (BEST(s, b) < 0 || m < BEST(s, b)) BEST(s, b) = m, CUT(s, b) = a;
      }
    }
  for (int s = PP - 1, b = L; s >= 0; s--) {
    int a = s ? CUT(s, b) : 0;
    count[s] = b - a;
    b = a;
  }
#undef BEST
#undef CUT
  free(prefix);
  free(best);
  free(cut);
}
