/* The deck's keys of burst parallelism and its planner ([parallel]; doc/burst.md). */
#include "burst/options.h"

#include <stdio.h>
#include <string.h>

#include "io/config.h"

#define CFG_OPTS burst_deck_t
// clang-format off: the table reads best one key per row
static const cfg_key_t rows[] = {
    CFG_STRING_KEY("parallel", "plan", plan_file, "", 0,
                   "burst: the plan file (surge-burst-plan text) giving each layer its ranks; without one, burst "
                   "plans at start-up from [parallel] profile"),
    CFG_FLOAT_KEY("parallel", "amplification", amplification, "2", 1, CFG_CLOSED, 1e6, CFG_CLOSED,
                  "surge-plan: amplification limit A (a layer may use n ranks only if n times its time there is "
                  "at most A times its one-rank time; layers that must share a rank set are judged by their "
                  "sums; doc/burst.md); --amp overrides it"),
    CFG_STRING_KEY("parallel", "profile", profile_file, "", 0,
                   "the burst cost profile (HDF5): surge-profile writes it (default profile.h5 when empty), "
                   "surge-plan reads it; --profile / -o override it; surge-train in burst mode plans from it (or "
                   "predicts the plan file's costs with it)"),
    CFG_FLOAT_KEY("parallel", "net_p2p_alpha_us", net_p2p_alpha_us, "-1", -1, CFG_CLOSED, 1e9, CFG_CLOSED,
                  "surge-plan, surge-sim: point-to-point latency (us) of the cost model; negative: the profile's"),
    CFG_FLOAT_KEY("parallel", "net_p2p_bytes_per_us", net_p2p_bytes_per_us, "-1", -1, CFG_CLOSED, 1e15, CFG_CLOSED,
                  "surge-plan, surge-sim: point-to-point bandwidth (bytes/us) of one rank's link; negative: the "
                  "profile's"),
    CFG_FLOAT_KEY("parallel", "net_ar_alpha_us", net_ar_alpha_us, "-1", -1, CFG_CLOSED, 1e9, CFG_CLOSED,
                  "surge-plan, surge-sim: latency (us) of one allreduce step; negative: the profile's"),
    CFG_FLOAT_KEY("parallel", "net_ar_bytes_per_us", net_ar_bytes_per_us, "-1", -1, CFG_CLOSED, 1e15, CFG_CLOSED,
                  "surge-plan, surge-sim: allreduce bandwidth (bytes/us) per rank; negative: the profile's"),
    CFG_BOOL_KEY("parallel", "bn_overlap", bn_overlap, "true",
                 "dp and burst: each batch norm's sums over its node's ranks (forward and backward) stay in flight "
                 "while the nodes that do not depend on them run, e.g. parallel branches (false: each completes "
                 "before the next node; the same bits either way; doc/design.md); surge-plan's cost model "
                 "charges the sums accordingly (doc/burst.md)"),
};
// clang-format on

/* Burst mode runs a plan: from its file, or made at start-up from a profile. */
static int check(const config_t *c, cfg_problem_t *p) {
  const burst_deck_t *o = burst_deck(c);
  if (strcmp(c->parallel_mode, "burst") != 0 || o->plan_file[0] || o->profile_file[0]) return 0;
  snprintf(p->key, sizeof p->key, "parallel.plan");
  snprintf(p->or_key, sizeof p->or_key, "parallel.mode");
  snprintf(p->msg, sizeof p->msg, "mode = burst needs parallel.plan or parallel.profile (hint: set plan = a plan "
           "file written by surge-plan, or profile = a surge-profile file to plan from at start-up; doc/burst.md)");
  return 1;
}

const cfg_part_t burst_options = {
    .name = "burst", .keys = rows, .nkeys = CFG_NROWS(rows), .size = sizeof(burst_deck_t), .check = check};
