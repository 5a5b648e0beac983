/* The planner for a model graph (graph_t, what training builds): each call plans its planner graph
 * (bgraph_from_graph), so both give the same plans. */
#include "burst/plan.h"

#define WITH_BGRAPH(g, model, call) \
  do {                              \
    bgraph_t bg_;                   \
    bgraph_from_graph(g, model, &bg_); \
    call;                           \
    bgraph_free(&bg_);              \
  } while (0)

void burst_plan_search(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan) {
  WITH_BGRAPH(g, "", burst_search(&bg_, p, o, plan));
}

void burst_plan_data_parallel(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o,
                              burst_plan_t *plan) {
  WITH_BGRAPH(g, "", burst_uniform(&bg_, p, o, burst_dp_ranks(o), plan));
}

void burst_plan_one_rank(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan) {
  WITH_BGRAPH(g, "", burst_uniform(&bg_, p, o, 1, plan));
}

void burst_plan_evaluate(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan) {
  WITH_BGRAPH(g, "", burst_evaluate(&bg_, p, o, plan));
}

void burst_plan_print(FILE *f, const graph_t *g, const burst_plan_t *plan, const burst_plan_t *dp) {
  WITH_BGRAPH(g, "", burst_plan_print_bg(f, &bg_, plan, dp));
}

void burst_plan_write(const char *path, const graph_t *g, const char *model, const burst_plan_t *plan) {
  WITH_BGRAPH(g, model, burst_plan_write_bg(path, &bg_, plan));
}

void burst_plan_fwrite(FILE *f, const char *path, const graph_t *g, const char *model, const burst_plan_t *plan) {
  WITH_BGRAPH(g, model, burst_plan_fwrite_bg(f, path, &bg_, plan));
}

void burst_plan_read(const char *path, const graph_t *g, const char *model, const burst_opts_t *o,
                     burst_plan_t *plan) {
  WITH_BGRAPH(g, model, burst_plan_read_bg(path, &bg_, o, plan));
}
