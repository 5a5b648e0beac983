/* Which of Optimus-CC's techniques a 3d run uses, and their settings: the deck's [compress] section
 * (doc/compression.md), converted by layout_opts_of. */
#ifndef SURGE_COMPRESS_OPTIONS_H
#define SURGE_COMPRESS_OPTIONS_H

typedef struct compress_opts {
  int cb, cb_rank;       /* compressed back-propagation of activation gradients, its rank */
  int lep;               /* lazy error propagation */
  int epilogue_only;     /* only the gradients a stage sends after its last forward */
  int fe;                /* fused embedding synchronisation */
  int sc_stages, dp_rank; /* stages below sc_stages compress data-parallel gradients at rank dp_rank */
  double warmup_fraction; /* of the run's steps, exact data-parallel sums first */
  double min_rate;       /* a matrix goes exact unless it shrinks this much (0: off) */
  long steps;            /* [run] steps */
} compress_opts_t;

/* Whether any technique is on. */
static inline int compress_any(const compress_opts_t *o) { return o->cb || o->fe || o->sc_stages > 0; }

#endif
