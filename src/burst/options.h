/* DeepPool's burst parallelism in a deck: the plan file, the profile, the planner's amplification
 * limit and the cost model's network constants ([parallel] keys of surge-train in burst mode,
 * surge-profile, surge-plan and surge-sim), and the executor's overlap of batch norm's sums (dp and
 * burst), declared here as this part's rows (core/keys.h). */
#ifndef SURGE_BURST_OPTIONS_H
#define SURGE_BURST_OPTIONS_H

#include "core/keys.h"

enum { BURST_PATH_MAX = 256 }; /* plan and profile keys: paths of at most 255 characters */

typedef struct burst_deck {
  char plan_file[BURST_PATH_MAX];    /* burst: the plan (burst/plan.h file format) */
  double amplification;              /* surge-plan: per-layer amplification limit A >= 1 */
  char profile_file[BURST_PATH_MAX]; /* surge-profile output / surge-plan input (burst/profiler.h) */
  double net_p2p_alpha_us, net_p2p_bytes_per_us, net_ar_alpha_us, net_ar_bytes_per_us; /* the cost
                                        model's network; negative: the profile's (burst/graph_file.h) */
  int bn_overlap;                    /* dp, burst: batch norm's sums in flight while other nodes run */
} burst_deck_t;

/* The rows of burst_deck_t, and the check that burst mode has a plan or a profile. */
extern const cfg_part_t burst_options;

/* A parsed configuration's values. */
static inline const burst_deck_t *burst_deck(const struct config *cfg) {
  return (const burst_deck_t *)cfg_part(cfg, &burst_options);
}

#endif
