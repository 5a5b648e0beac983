/* Graph files and the DeepPool importer: a graph file read in any node order and written back,
 * its bad input (each an exit 2 with one line naming file:line), the A100 profiles of VGG-16,
 * Wide-ResNet-101-2 and Inception-v3 imported with the bytes of their layers, and a few points of
 * VGG-16's frontier fixed (B = 32 on 8 ranks and B = 64 on 64, DeepPool's A100 network).
 *
 * The data come from $SURGE_TOP_SRCDIR/tests/data (make check sets it; default: the current
 * directory's tests/data). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "burst/graph_file.h"
#include "burst/plan.h"
#include "nn/recompute.h"
#include "nn/zoo.h"
#include "core/error.h"
#include "child.h"
#include "tap.h"

#define NEAR(a, b, tol) (fabs((double)(a) - (double)(b)) <= (tol) * (1 + fabs((double)(b))))

static char tmpdir[64];
static const char *data;

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs(text, f);
  fclose(f);
}

static const char *tmp(const char *name) {
  static char path[8][160];
  static int k;
  k = (k + 1) % 8;
  snprintf(path[k], sizeof path[k], "%s/%s", tmpdir, name);
  return path[k];
}

static int find(const bgraph_t *g, const char *name) {
  for (int v = 0; v < g->n; v++)
    if (strcmp(g->v[v].name, name) == 0) return v;
  return -1;
}

/* A fork of three branches (one of two nodes) into a concat, nodes listed out of order. */
static const char good[] =
    "surge-graph 1\n"
    "model fork3\n"
    "batches 1 2 4 8\n"
    "p2p_alpha_us 2\n"
    "p2p_bytes_per_us 1e4\n"
    "ar_alpha_us 1\n"
    "ar_bytes_per_us 1e4\n"
    "# name kind inputs out_bytes param_bytes us@1 us@2 us@4 us@8\n"
    "cat concat a,b2,c 3000 0 1 1 1 1\n"
    "input input - 400 0\n"
    "s linear input 1000 4000 10 12 16 24\n"
    "a conv s 1000 400 20 30 50 90\n"
    "b1 conv s 1000 400 20 30 50 90\n"
    "b2 relu b1 1000 0 5 6 8 12\n"
    "c pool s 1000 0 4 5 7 11   # a comment\n"
    "head linear cat 40 120040 8 9 11 15\n"
    "end\n";

static void test_read_write(void) {
  const char *path = tmp("good.graph"), *back = tmp("back.graph");
  write_text(path, good);
  bgraph_t g;
  burst_profile_t p;
  graph_file_read(path, 0, &g, &p);
  int cat = find(&g, "cat"), b2 = find(&g, "b2"), head = find(&g, "head");
  tap_ok(g.n == 8 && strcmp(g.v[0].name, "input") == 0 && head == 7 && cat > b2 && g.v[cat].nin == 3,
         "graph file: 8 nodes sorted topologically (input first, head last, cat after its three inputs)");
  double us;
  tap_ok(burst_profile_find(&p, find(&g, "a"), 4, &us) == 0 && us == 50 && p.net.p2p_bytes_per_us == 1e4 &&
             strcmp(g.model, "fork3") == 0 && g.v[find(&g, "s")].grad_bytes == 4000,
         "graph file: times, network, model name and parameter bytes read");
  tap_ok(p.step.step_us == 0 && p.step.loss_us_per_sample == 0, "graph file: no step costs given, none charged");
  p.step = (burst_step_costs_t){.data_us_per_sample = 0.25, .loss_us_per_sample = 1.5, .step_us = 300};
  graph_file_write(back, &g, &p);
  bgraph_t g2;
  burst_profile_t p2;
  graph_file_read(back, 0, &g2, &p2);
  tap_ok(g2.n == g.n && g2.fingerprint == g.fingerprint && burst_profile_find(&p2, find(&g2, "a"), 4, &us) == 0 &&
             us == 50,
         "graph file: written and read back, the same graph (fingerprint %016llx)", (unsigned long long)g.fingerprint);
  tap_ok(p2.step.data_us_per_sample == 0.25 && p2.step.loss_us_per_sample == 1.5 && p2.step.step_us == 300,
         "graph file: the rest of a step (data, loss, optimizer) written and read back");
  /* a four-branch join plans, and the frontier exists */
  burst_opts_t o = {8, 8, BURST_NO_LIMIT, BURST_RANKS_POW2};
  burst_frontier_t fr;
  burst_frontier_build(&g, &p, &o, 0, &fr);
  burst_plan_t pl;
  burst_frontier_plan(&fr, 0, &pl);
  tap_ok(fr.n >= 2 && fr.blocks == 1 && pl.ranks_used <= 8, "a join of three branches plans: %d frontier points", fr.n);
  burst_plan_free(&pl);
  burst_frontier_free(&fr);
  bgraph_free(&g2);
  burst_profile_free(&p2);
  bgraph_free(&g);
  burst_profile_free(&p);
}

/* The rank-set rules (graph_ties.h) of the zoo's gpt with recompute = block, exported and read back:
 * every node's fused, same-ranks, shared-weight and recompute rule the same, so a plan from the file is
 * the deck's; and a node named like a rule is a node where its line has a node's columns. */
static void test_ties(void) {
  zoo_opts_t zo = {.gpt = {.layers = 2, .width = 16, .heads = 2, .context = 8}};
  snprintf(zo.model, sizeof zo.model, "gpt");
  graph_t model;
  char err[256] = "";
  if (zoo_build(zo, shape1(8), 256, &model, err, sizeof err) != 0) {
    tap_ok(0, "the gpt builds: %s", err);
    return;
  }
  model.recompute = RECOMPUTE_BLOCK;
  bgraph_t g;
  bgraph_from_graph(&model, "gpt", &g);
  burst_profile_t p;
  burst_profile_init(&p, g.n, "flat");
  p.net = (burst_net_t){1, 1e4, 1, 1e4};
  for (int v = 1; v < g.n; v++) burst_profile_set(&p, v, 4, 10);
  const char *path = tmp("ties.graph");
  graph_file_write(path, &g, &p);
  bgraph_t back;
  burst_profile_t pb;
  graph_file_read(path, 0, &back, &pb);
  int same = back.n == g.n, rules = 0;
  for (int v = 0; v < g.n && same; v++) {
    const bgraph_node_t *a = &g.v[v], *b = &back.v[v];
    same = a->tied == b->tied && a->with == b->with && a->weight_of == b->weight_of &&
           a->recompute_from == b->recompute_from && strcmp(a->name, b->name) == 0;
    rules += (a->with != 0) + (a->weight_of != 0) + (a->recompute_from != 0);
  }
  tap_ok(same && rules > 20 && back.v[find(&back, "lm_head")].weight_of == find(&back, "wte") &&
             back.v[find(&back, "blocks.1.gelu")].tied && back.v[find(&back, "blocks.1.add2")].recompute_from,
         "graph file: the gpt's rank-set rules (recompute = block) written and read back the same (%d)", rules);
  bgraph_free(&back);
  burst_profile_free(&pb);
  /* a branch's first node on its fork's ranks: the same count and first rank in every frontier plan,
   * though the lanes would place it elsewhere */
  char text[sizeof good + 64];
  snprintf(text, sizeof text, "%.*ssame_ranks b1 s\nsame_ranks b2 s\nend\n", (int)(strlen(good) - 4), good);
  write_text(path, text);
  graph_file_read(path, 0, &back, &pb);
  {
    bgraph_t plain; /* the rules are part of the fingerprint that plan files check */
    burst_profile_t pp;
    write_text(tmp("plain.graph"), good);
    graph_file_read(tmp("plain.graph"), 0, &plain, &pp);
    tap_ok(back.fingerprint != plain.fingerprint && plain.fingerprint == bgraph_fingerprint(&plain),
           "graph file: rules change the graph's fingerprint (%016llx with, %016llx without)",
           (unsigned long long)back.fingerprint, (unsigned long long)plain.fingerprint);
    bgraph_free(&plain);
    burst_profile_free(&pp);
  }
  burst_opts_t o = {8, 8, BURST_NO_LIMIT, BURST_RANKS_POW2};
  burst_frontier_t fr;
  burst_frontier_build(&back, &pb, &o, 0, &fr);
  int kept = 0, s_ = find(&back, "s"), b1 = find(&back, "b1"), b2 = find(&back, "b2");
  for (int i = 0; i < fr.n; i++) {
    burst_plan_t pl;
    burst_frontier_plan(&fr, i, &pl);
    kept += pl.n[b1] == pl.n[s_] && pl.first[b1] == pl.first[s_] && pl.n[b2] == pl.n[s_] &&
            pl.first[b2] == pl.first[s_];
    burst_plan_free(&pl);
  }
  tap_ok(kept == fr.n && fr.n > 1,
         "graph file: a branch kept on its fork's ranks (same_ranks) in every frontier plan (%d of %d)", kept, fr.n);
  burst_frontier_free(&fr);
  bgraph_free(&back);
  burst_profile_free(&pb);
  /* rules that overlap join their sets: c fused into b and the segment a .. d, one set from a; e
   * same_ranks d joins it too */
  write_text(path, "surge-graph 1\nbatches 1\ninput input - 4 0\na linear input 4 4 1\nb linear a 4 4 1\n"
                   "c relu b 4 0 1\nd linear c 4 4 1\ne linear d 4 4 1\nfused c\nrecompute d a\nsame_ranks e d\nend\n");
  graph_file_read(path, 0, &back, &pb);
  int joined = back.v[find(&back, "a")].with == 0;
  for (const char *const *x = (const char *const[]){"b", "c", "d", "e", NULL}; *x; x++)
    joined &= back.v[find(&back, *x)].with == find(&back, "a");
  tap_ok(joined && back.v[find(&back, "d")].recompute_from == find(&back, "a"),
         "graph file: overlapping rules join one set (fused c, recompute d a, same_ranks e d: all on a's ranks)");
  bgraph_free(&back);
  burst_profile_free(&pb);
  /* a node named 'fused' (five columns and times) is a node */
  write_text(path, "surge-graph 1\nbatches 1\ninput input - 4 0\na linear input 4 4 1\nfused relu a 4 0 1\n"
                   "same_ranks fused a\nend\n");
  graph_file_read(path, 0, &back, &pb);
  tap_ok(back.n == 3 && strcmp(back.v[2].name, "fused") == 0 && back.v[2].with == 1 && !back.v[2].tied,
         "graph file: a node named 'fused' is a node; a rule may name it");
  bgraph_free(&back);
  burst_profile_free(&pb);
  bgraph_free(&g);
  burst_profile_free(&p);
  graph_free(&model);
}

/* ---- bad input ---- */

typedef struct bad_case {
  const char *path;
  int plan; /* also plan at G = 8, B = 8 (finds a missing batch) */
} bad_case_t;

static void read_in_child(const void *arg) {
  const bad_case_t *bc = arg;
  bgraph_t g;
  burst_profile_t p;
  graph_file_read(bc->path, 0, &g, &p);
  if (bc->plan) {
    burst_opts_t o = {8, 8, BURST_NO_LIMIT, BURST_RANKS_POW2};
    burst_plan_t pl;
    burst_search(&g, &p, &o, &pl);
  }
}

/* good with line `line` (1-based) replaced. */
static void bad_variant(const char *path, int line, const char *repl) {
  char buf[4096] = "";
  const char *s = good;
  for (int i = 1; *s; i++) {
    const char *nl = strchr(s, '\n');
    size_t len = (size_t)(nl - s) + 1;
    if (i == line)
      strcat(buf, repl);
    else
      strncat(buf, s, len);
    s += len;
  }
  write_text(path, buf);
}

static void expect_bad(int line, const char *repl, int plan, const char *what, const char *needle) {
  const char *path = tmp("bad.graph");
  bad_variant(path, line, repl);
  bad_case_t bc = {path, plan};
  expect_input_error(read_in_child, &bc, what, needle);
}

static void test_bad_input(void) {
  /* lines of `good`: 11 s, 12 a, 16 head, 17 end */
  static const struct {
    int line, plan;
    const char *repl, *what, *needle;
  } cases[] = {
      {11, 0, "s linear nope 1000 4000 10 12 16 24\n", "a node refers to an unknown input",
       "bad.graph:11: node 's' takes input 'nope', which no line defines"},
      {11, 0, "s linear head 1000 4000 10 12 16 24\n", "a cycle", "is on a cycle of inputs"},
      {12, 0, "a conv s 1000 400 20 30 50\n", "a node line missing a per-rank batch",
       "bad.graph:12: node 'a': 8 columns, expected 9"},
      {12, 1, "a conv s 1000 400 20 30 - 90\n", "a per-rank batch the plan needs is not measured",
       "bad.graph:12: profile"},
      {12, 0, "a conv s 1000 400 20 -30 50 90\n", "a negative time",
       "bad.graph:12: node 'a': time '-30' for per-rank batch 2 is not a number in [0, 1e+12]"},
      {12, 0, "a conv s 1000 400 20 nan 50 90\n", "a non-finite time", "bad.graph:12: node 'a': time 'nan' for per-rank batch 2"},
      {12, 0, "a conv s 1000 400 20 inf 50 90\n", "an infinite time", "bad.graph:12: node 'a': time 'inf'"},
      {13, 0, "a conv s 1000 400 20 30 50 90\n", "a name defined twice",
       "bad.graph:13: node 'a' is defined twice (first on line 12)"},
      {16, 0, "head linear cat 40 120040 8 9 11 15\nextra relu cat 4 0 1 1 1 1\n", "two outputs", "a graph has one output"},
      {12, 0, "a conv - 1000 400 20 30 50 90\n", "a second node without inputs",
       "bad.graph:12: node 'a' has no inputs but kind 'conv'"},
      {3, 0, "batches 1 4 2 8\n", "batches out of order", "bad.graph:3: batches must be ascending"},
      {4, 0, "p2p_alpha_us -2\n", "a negative latency", "bad.graph:4: p2p_alpha_us -2 out of range"},
      {4, 0, "step_us 1e13\n", "an optimizer time beyond 1e12 us", "bad.graph:4: step_us 1e+13 out of range 0..1e+12"},
      {17, 0, "", "a truncated file", "file ends without 'end'"},
      {1, 0, "surge-graph 7\n", "a future format", "bad.graph:1: graph format version 7"},
      /* rank-set rules (line 17, before end) */
      {17, 0, "same_ranks b2 nope\nend\n", "a rule naming an unknown node", "bad.graph:17: same_ranks: no node 'nope'"},
      {17, 0, "same_ranks s head\nend\n", "a rule naming a later node",
       "bad.graph:17: same_ranks s head: 'head' must come before 's'"},
      {17, 0, "fused cat\nend\n", "a fused node of three inputs", "bad.graph:17: fused cat: the node has 3 inputs"},
      {17, 0, "fused b2\nfused b2\nend\n", "a rule given twice",
       "bad.graph:18: fused b2 given twice (first on line 17)"},
      {17, 0, "fused b2\nsame_ranks b2 s\nend\n", "fused and same_ranks on one node",
       "bad.graph:18: node 'b2' is both fused and same_ranks (line 17)"},
      {17, 0, "shares_weight head\nend\n", "a rule missing its node",
       "bad.graph:17: expected 'shares_weight NODE EARLIER_NODE'"},
      {17, 0, "same_ranks s input\nend\n", "a rule naming the input node",
       "bad.graph:17: same_ranks s input: the input node holds no work"},
      {17, 1, "same_ranks head s\nend\n", "a rule the search cannot keep (no neighbour in the set), named by its line",
       "bad.graph:17: burst planner: node 7 'head' must run on the ranks of node 1 's'"},
      {17, 0, "same_ranks input s\nend\n", "a rule on the input node",
       "bad.graph:17: same_ranks input: the input node takes no rule"},
      {17, 0, "fused a\nfused c\nend\n", "two nodes fused into one",
       "bad.graph:18: fused c: its input 's' has a fused node already, 'a' (line 17)"},
      {17, 0, "recompute b2 s\nrecompute cat b1\nend\n", "overlapping recomputed segments",
       "bad.graph:18: recompute cat b1: its segment overlaps the one ending at 'b2' (line 17)"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    expect_bad(cases[k].line, cases[k].repl, cases[k].plan, cases[k].what, cases[k].needle);
}

/* ---- DeepPool profiles ---- */

static void dp_import(const char *name, const char *structure, bgraph_t *g, burst_profile_t *p, deeppool_report_t *r) {
  char prof[512], st[512];
  snprintf(prof, sizeof prof, "%s/deeppool/%s", data, name);
  if (structure) snprintf(st, sizeof st, "%s/deeppool/%s", data, structure);
  deeppool_import(prof, structure ? st : NULL, NULL, g, p, r);
  p->net = (burst_net_t){40, 2.66e5, 0, 2.66e5}; /* surge-plan --network a100 */
}

static void test_deeppool(void) {
  bgraph_t g;
  burst_profile_t p;
  deeppool_report_t r;
  dp_import("A100_vgg.prof", NULL, &g, &p, &r);
  int fc1 = find(&g, "linear_20+relu");
  tap_ok(r.rows == 37 && r.batches == 9 && r.fused == 15 && g.n == 23 && fc1 == 20,
         "VGG-16: 37 rows a batch, 9 batches, 15 ReLUs joined: 22 layers and the input");
  double us;
  tap_ok(g.v[1].act_bytes == 4.0 * 64 * 224 * 224 && g.v[1].grad_bytes == 4.0 * (3 * 64 * 9 + 64) &&
             g.v[fc1].grad_bytes == 4.0 * (25088.0 * 4096 + 4096) && g.v[0].act_bytes == 4.0 * 3 * 224 * 224,
         "VGG-16 bytes: conv1 output 64x224x224 floats, conv1 and fc1 parameters, input 3x224x224");
  tap_ok(burst_profile_find(&p, 1, 64, &us) == 0 && us == 2157 + 6 + 1205 + 3730,
         "VGG-16: conv1 at batch 64 costs its row and its ReLU's, forward and backward (%.0f us)", us);
  /* interpolation: 5 lies between 4 and 6; 128 is twice 64 */
  double t4, t6, t64;
  burst_profile_find(&p, 1, 4, &t4);
  burst_profile_find(&p, 1, 6, &t6);
  burst_profile_find(&p, 1, 64, &t64);
  tap_ok(NEAR(burst_profile_us(&p, &g, 1, 5), (t4 + t6) / 2, 1e-12) && NEAR(burst_profile_us(&p, &g, 1, 128), 2 * t64, 1e-12),
         "imported profiles interpolate between batches and scale above the largest");

  /* VGG-16's frontier: B = 32 on 8 ranks, B = 64 on 64 (the numbers surge-plan prints) */
  struct { int G, B, n; double fast_t, fast_r, mid_t, mid_r, lean_t, lean_r; } want[] = {
      {8, 32, 63, 10842.355, 69825.956, 19145.659, 59592.331, 53750.000, 53750.000},
      {64, 64, 211, 6245.167, 243038.997, 11511.773, 129164.193, 103133.000, 103133.000},
  };
  for (int x = 0; x < 2; x++) {
    burst_opts_t o = {want[x].G, want[x].B, BURST_NO_LIMIT, BURST_RANKS_DIVISORS};
    burst_frontier_t fr;
    burst_frontier_build(&g, &p, &o, 0, &fr);
    const burst_front_point_t *f = &fr.pt[0], *l = &fr.pt[fr.n - 1], *m = &fr.pt[(fr.n - 1) / 2];
    tap_diag("VGG-16 B=%d G=%d: %d points, fastest %.3f us %.3f rank-us, leanest %.3f us %.3f rank-us", want[x].B,
             want[x].G, fr.n, f->iter_us, f->rank_us, l->iter_us, l->rank_us);
    tap_ok(fr.n == want[x].n && NEAR(f->iter_us, want[x].fast_t, 1e-7) && NEAR(f->rank_us, want[x].fast_r, 1e-7) &&
               NEAR(l->iter_us, want[x].lean_t, 1e-7) && NEAR(l->rank_us, want[x].lean_r, 1e-7) &&
               NEAR(m->iter_us, want[x].mid_t, 1e-7) && NEAR(m->rank_us, want[x].mid_r, 1e-7),
           "VGG-16 frontier at B = %d, G = %d: %d points; fastest, middle and leanest fixed", want[x].B, want[x].G,
           want[x].n);
    burst_frontier_free(&fr);
  }
  bgraph_free(&g);
  burst_profile_free(&p);

  dp_import("A100_wrn.prof", NULL, &g, &p, &r);
  int b1 = 4;
  tap_ok(r.rows == 39 && r.batches == 8 && g.n == 39 && strcmp(g.v[b1].kind, "ResnetBottleneck") == 0 &&
             g.v[b1].act_bytes == 4.0 * 256 * 56 * 56,
         "WRN-101-2: 39 rows a batch (33 bottleneck blocks), 8 batches; the first block outputs 256x56x56");
  bgraph_free(&g);
  burst_profile_free(&p);

  dp_import("A100_inception.prof", "inception-v3.graph", &g, &p, &r);
  int cat = find(&g, "Mixed_5b.cat");
  tap_ok(r.rows == 107 && g.n == 126 && r.missing == 18 && cat > 0 && g.v[cat].nin == 4 &&
             g.v[cat].act_bytes == 4.0 * 256 * 35 * 35,
         "Inception-v3: 107 rows onto a 126-node structure; 18 nodes without a row (%s); Mixed_5b joins 4 "
         "branches into 256x35x35",
         r.missing_names);
  burst_opts_t o = {8, 32, BURST_NO_LIMIT, BURST_RANKS_DIVISORS};
  burst_plan_t pl;
  burst_search(&g, &p, &o, &pl);
  tap_ok(pl.ranks_used <= 8 && pl.iter_us > 0, "Inception-v3 plans on 8 ranks: %.1f us", pl.iter_us);
  burst_plan_free(&pl);
  bgraph_free(&g);
  burst_profile_free(&p);
}

typedef struct import_case {
  const char *prof, *structure;
} import_case_t;

static void import_in_child(const void *arg) {
  const import_case_t *ic = arg;
  bgraph_t g;
  burst_profile_t p;
  deeppool_report_t r;
  deeppool_import(ic->prof, ic->structure, NULL, &g, &p, &r);
}

static void test_deeppool_bad(void) {
  char prof[512], st[512];
  snprintf(prof, sizeof prof, "%s/deeppool/A100_inception.prof", data);
  /* a structure whose first branch convolution takes the wrong input */
  snprintf(st, sizeof st, "%s/deeppool/inception-v3.graph", data);
  FILE *f = fopen(st, "r");
  char line[512], text[65536] = "";
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "Mixed_5b.branch5x5_1 ", 21) == 0)
      strcat(text, "Mixed_5b.branch5x5_1 conv2d Mixed_5b.branch1x1 - -\n");
    else
      strcat(text, line);
  if (f) fclose(f);
  const char *bad = tmp("inception-bad.graph");
  write_text(bad, text);
  import_case_t ic = {prof, bad};
  expect_input_error(import_in_child, &ic, "a structure that does not match the profile",
                     "node 'Mixed_5b.branch5x5_1' takes 'Mixed_5b.branch1x1'");
  const char *rows = tmp("bad.prof");
  write_text(rows, "conv2d{\"in_channels\":3,\"kernel_size\":3,\"out_channels\":8}[4][3,8,8]  1.0  10  20\n"
                   "conv2d{\"in_channels\":8,\"kernel_size\":3,\"out_channels\":8}[4][8,6,6]  1.0  10  zz\n");
  import_case_t ic2 = {rows, NULL};
  expect_input_error(import_in_child, &ic2, "a profile row with a bad time", "bad.prof:2: backward time (us) 'zz'");
  write_text(rows, "conv9d{\"a\":1}[4][3,8,8]  1.0  10  20\n");
  expect_input_error(import_in_child, &ic2, "an unknown layer type", "bad.prof:1: unknown layer type 'conv9d'");
}

int main(void) {
  static char dir[1024];
  const char *top = getenv("SURGE_TOP_SRCDIR");
  snprintf(dir, sizeof dir, "%s/tests/data", top && *top ? top : ".");
  data = dir;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/surge-graph-XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  test_read_write();
  test_ties();
  test_bad_input();
  test_deeppool();
  test_deeppool_bad();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) tap_diag("could not remove %s", tmpdir);
  return tap_done();
}
