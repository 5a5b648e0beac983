#include "burst/plan_input.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burst/options.h"
#include "core/error.h"

int plan_input_given(const cli_t *cli) { return cli_has(cli, "--graph") || cli_has(cli, "--deeppool"); }

double plan_parse_positive(const char *text, const char *flag) {
  char *end;
  double v = strtod(text, &end);
  if (!text[0] || *end || !isfinite(v) || v <= 0) surge_input_error("%s %s: expected a positive number", flag, text);
  return v;
}

/* A network flag's number in [lo, hi] (the bounds a profile's network takes: profile.h). */
static double parse_in(const char *text, const char *flag, double lo, double hi) {
  char *end;
  double v = strtod(text, &end);
  if (!text[0] || *end || !(v >= lo && v <= hi))
    surge_input_error("%s %s: expected a number in [%g, %g]", flag, text, lo, hi);
  return v;
}

double plan_parse_amp(const char *text, const char *flag) {
  if (strcmp(text, "none") == 0) return BURST_NO_LIMIT;
  char *end;
  double a = strtod(text, &end);
  if (!text[0] || *end || !isfinite(a) || a < 1) surge_input_error("%s %s: expected a number >= 1 or 'none'", flag, text);
  return a;
}

burst_ranks_policy_t plan_parse_policy(const char *text) {
  if (strcmp(text, "divisors") == 0) return BURST_RANKS_DIVISORS;
  if (strcmp(text, "pow2") == 0) return BURST_RANKS_POW2;
  if (strcmp(text, "any") == 0) return BURST_RANKS_ANY;
  surge_input_error("--policy %s: expected divisors, pow2 or any", text);
}

void plan_input_network(const cli_t *cli, const config_t *cfg, burst_net_t *net) {
  if (cfg) {
    const burst_deck_t *o = burst_deck(cfg);
    const double deck[4] = {o->net_p2p_alpha_us, o->net_p2p_bytes_per_us, o->net_ar_alpha_us, o->net_ar_bytes_per_us};
    double *dst[4] = {&net->p2p_alpha_us, &net->p2p_bytes_per_us, &net->ar_alpha_us, &net->ar_bytes_per_us};
    for (int k = 0; k < 4; k++)
      if (deck[k] >= 0) *dst[k] = deck[k];
  }
  const char *preset = cli_value(cli, "--network", 0);
  if (preset) {
    if (strcmp(preset, "a100") != 0) surge_input_error("--network %s: the presets are: a100", preset);
    /* DeepPool's NET_LATENCY and A100 NET_BANDWIDTH; its gradient sync had no latency term */
    *net = (burst_net_t){40, 2.66e5, 0, 2.66e5};
  }
  const char *v;
  const double L = BURST_MAX_LATENCY_US, B0 = BURST_MIN_BYTES_PER_US, B1 = BURST_MAX_BYTES_PER_US;
  if ((v = cli_value(cli, "--p2p-latency", 0))) net->p2p_alpha_us = parse_in(v, "--p2p-latency", 0, L);
  if ((v = cli_value(cli, "--p2p-bandwidth", 0))) net->p2p_bytes_per_us = parse_in(v, "--p2p-bandwidth", B0, B1);
  if ((v = cli_value(cli, "--allreduce-latency", 0))) net->ar_alpha_us = parse_in(v, "--allreduce-latency", 0, L);
  if ((v = cli_value(cli, "--allreduce-bandwidth", 0)))
    net->ar_bytes_per_us = parse_in(v, "--allreduce-bandwidth", B0, B1);
}

void plan_input_load_files(const char *graph, const char *dp, const char *structure, plan_input_t *in,
                           FILE *notes) {
  memset(in, 0, sizeof *in);
  if (graph && dp) surge_input_error("a graph file and a DeepPool profile both given (%s, %s): give one", graph, dp);
  if (structure && !dp) surge_input_error("a structure file (%s) goes with a DeepPool profile (it maps its rows)", structure);
  if (graph) {
    graph_file_read(graph, 0, &in->g, &in->p);
  } else if (dp) {
    deeppool_import(dp, structure, NULL, &in->g, &in->p, &in->report);
    in->imported = 1;
    const deeppool_report_t *r = &in->report;
    fprintf(notes, "imported %s: %d layers at %d per-rank batches, %d nodes", dp, r->rows, r->batches, in->g.n);
    if (r->fused) fprintf(notes, "; %d in-place ReLUs joined the layer before them (their rows hold its backward)", r->fused);
    fprintf(notes, "\n");
    if (r->missing)
      fprintf(notes, "note: %d nodes have no row in the profile and cost 1 us at every batch, as the original "
                     "planner charged them: %s\n", r->missing, r->missing_names);
    fprintf(notes, "note: per-rank batches between the profile's are interpolated linearly, above its largest "
                   "proportionally\n");
  } else {
    surge_input_error("no input: give --graph FILE or --deeppool FILE (or a deck with a profile)");
  }
}

void plan_input_load(const cli_t *cli, const config_t *cfg, plan_input_t *in, FILE *notes) {
  const char *graph = cli_value(cli, "--graph", 0), *dp = cli_value(cli, "--deeppool", 0);
  plan_input_load_files(graph, dp, cli_value(cli, "--structure", 0), in, notes);
  plan_input_network(cli, cfg, &in->p.net);
  burst_net_require(&in->p.net, graph ? graph : dp);
}

void plan_input_free(plan_input_t *in) {
  bgraph_free(&in->g);
  burst_profile_free(&in->p);
}
