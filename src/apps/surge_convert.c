/* surge-convert IN OUT: a gpt's weights between Surge's files (model.h5, a checkpoint's /params),
 * Hugging Face's safetensors (GPT-2 names and layouts, config.json beside) and llm.c's model file,
 * float32 or bfloat16 (doc/formats.md, "Weights in and out"). The input's format is told by its
 * first bytes, the output's by --to or OUT's extension. One process does the work (under mpiexec,
 * rank 0 converts and the others wait). The work lives in src/io/weights*.c. */
#include <errno.h>
#include <hdf5.h>
#include <libgen.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "comm/comm.h"
#include "surge_build_config.h"
#include "core/cli.h"
#include "core/error.h"
#include "core/timer.h"
#include "io/outputs.h"
#include "io/weights.h"

static const char usage[] =
    "usage: surge-convert IN OUT [--to h5|safetensors|llmc] [--dtype float32|bfloat16]\n"
    "  IN   model.h5, a checkpoint (its /params), a safetensors file (Hugging Face GPT-2; config.json beside it)\n"
    "       or llm.c's model file; told apart by their first bytes\n"
    "  OUT  written under OUT.tmp and renamed; safetensors also writes config.json in OUT's directory\n"
    "  --to      OUT's format (default: from its extension: .h5, .safetensors, .bin)\n"
    "  --dtype   safetensors and llm.c: float32 (default, exact) or bfloat16 (rounded to nearest even)\n"
    "Refused with the reason (exit 2): a model with no exact GPT-2 counterpart (not the zoo's gpt), a\n"
    "vocabulary or shape that does not match, a damaged file. Man page: surge-convert(1).\n";

/* OUT's directory, made when it is missing (one level: "hf/model.safetensors" in an existing
 * directory), so the output and config.json have a place. */
static void make_parent(const char *out) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", out);
  const char *parent = dirname(dir);
  if (mkdir(parent, 0777) != 0 && errno != EEXIST)
    surge_input_error("%s: cannot make its directory %s: %s", out, parent, strerror(errno));
}

static weights_format_t out_format(const char *out, const char *to) {
  if (!to) {
    const char *dot = strrchr(out, '.');
    to = !dot ? "" : !strcmp(dot, ".h5") ? "h5" : !strcmp(dot, ".safetensors") ? "safetensors" : !strcmp(dot, ".bin") ? "llmc" : "";
    if (!*to) surge_input_error("%s: cannot tell the format from the name: give --to h5|safetensors|llmc", out);
  }
  if (!strcmp(to, "h5")) return WEIGHTS_H5;
  if (!strcmp(to, "safetensors")) return WEIGHTS_SAFETENSORS;
  if (!strcmp(to, "llmc")) return WEIGHTS_LLMC;
  surge_input_error("--to %s: expected h5, safetensors or llmc", to);
}

/* OUT (and a safetensors file's config.json beside it, each first written under its name + ".tmp")
 * against IN (and a safetensors IN's config.json, which it reads): none may be written over another.
 * A safetensors file converted into its own directory would have its config.json rewritten: refused
 * (write OUT in another directory). */
static void check_files(const char *in, const char *out, weights_format_t to) {
  char in_dir[4096], out_dir[4096], in_cfg[4200], out_cfg[4200], out_tmp[4200], cfg_tmp[4300];
  snprintf(in_dir, sizeof in_dir, "%s", in);
  snprintf(out_dir, sizeof out_dir, "%s", out);
  snprintf(in_cfg, sizeof in_cfg, "%s/config.json", dirname(in_dir));
  snprintf(out_cfg, sizeof out_cfg, "%s/config.json", dirname(out_dir));
  snprintf(out_tmp, sizeof out_tmp, "%s.tmp", out);
  snprintf(cfg_tmp, sizeof cfg_tmp, "%s.tmp", out_cfg);
  int st = to == WEIGHTS_SAFETENSORS;
  const io_path_t ins[] = {{"IN", in}, {"IN's config.json", weights_detect(in) == WEIGHTS_SAFETENSORS ? in_cfg : NULL}};
  const io_output_t outs[] = {{"OUT", out, 0, 1}, /* each written under a temporary name, renamed; make_parent */
                              {"OUT's temporary file", out_tmp, 0, 1},
                              {"OUT's config.json (written beside it)", st ? out_cfg : NULL, 0, 1},
                              {"OUT's config.json's temporary file", st ? cfg_tmp : NULL, 0, 1}};
  io_outputs_check(ins, 2, outs, 4);
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  const char *in = NULL, *out = NULL, *to_name = NULL, *dtype = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    cli_help_or_version(a, argv[0], usage);
    if (!strcmp(a, "--to") || !strcmp(a, "--dtype")) {
      if (i + 1 >= argc) surge_input_error("%s needs a value (try --help)", a);
      *(a[2] == 't' ? &to_name : &dtype) = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      surge_input_error("unknown option '%s' (try --help)", a);
    } else if (!in || !out) {
      *(in ? &out : &in) = a;
    } else {
      surge_input_error("'%s': surge-convert takes IN and OUT only (try --help)", a);
    }
  }
  if (!out) surge_input_error("surge-convert IN OUT: %s is missing (try --help)", in ? "OUT" : "IN");
  weights_format_t to = out_format(out, to_name);
  int bf16 = dtype && !strcmp(dtype, "bfloat16");
  if (dtype && !bf16 && strcmp(dtype, "float32")) surge_input_error("--dtype %s: expected float32 or bfloat16", dtype);
  if (bf16 && to == WEIGHTS_H5) surge_input_error("--dtype bfloat16: model.h5 holds float32 parameters");
  comm_t world, self;
  comm_world(&world);
  comm_split(&world, world.rank == 0 ? 0 : -1, 0, &self);
  if (world.rank == 0) {
    check_files(in, out, to);
    double t0 = surge_now();
    weights_format_t from = weights_detect(in);
    gpt2_dims_t d;
    weights_gpt2_dims(in, &d);
    graph_t g;
    gpt2_graph(&d, 0, &g);
    float *params = slab_alloc(&g.params);
    weights_read(in, &g, params);
    double t1 = surge_now();
    make_parent(out);
    switch (to) {
    case WEIGHTS_H5: weights_write_h5(out, &g, params, &self); break;
    case WEIGHTS_SAFETENSORS: weights_write_safetensors(out, &g, params, bf16); break;
    case WEIGHTS_LLMC: weights_write_llmc(out, &g, params, bf16); break;
    }
    double t2 = surge_now();
    printf("converted %s (%s) -> %s (%s%s): gpt of %d blocks, width %d, %d heads, %d positions, vocabulary %d (padded %d), "
           "%zu parameters; read %.2f s, write %.2f s\n",
           in, weights_format_name(from), out, weights_format_name(to), to == WEIGHTS_H5 ? "" : bf16 ? ", bfloat16" : ", float32",
           d.L, d.C, d.NH, d.maxT, d.V, d.Vp, g.params.total, t1 - t0, t2 - t1);
    slab_free(params);
    graph_free(&g);
    comm_free(&self);
  }
  MPI_Barrier(world.mpi);
  comm_free(&world);
  MPI_Finalize();
  return 0;
}
