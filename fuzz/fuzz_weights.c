/* The weights readers (io/weights.h: safetensors, llm.c's model file, model.h5 / a checkpoint's
 * /params, told apart by the first bytes): any file is refused with an input error or read into the
 * parameters of a small gpt (2 blocks, width 8, 2 heads, 4 positions, 20 tokens padded to 24);
 * weights_gpt2_dims reads the sizes any file claims. What is accepted, written again as safetensors
 * and as llm.c's file, reads back bit for bit (but the padding rows, zeroed). With SURGE_FUZZ_SEED_DIR set, the harness instead
 * writes that model in each format there (the seed corpus) and exits. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/rng.h"
#include "fuzz.h"
#include "io/weights.h"

static comm_t world;
static graph_t g;
static float *params, *again;

/* what was accepted, through writer and reader of one format: the same bits (the token table's
 * padding rows zeroed first: Hugging Face's file does not hold them, and reading it zeroes them) */
static void round_trip(const char *dir, const char *name, int llmc) {
  const slab_tensor_t *wte = &g.params.t[gpt2_find(&g, ZOO_GPT_WTE, 0)];
  size_t real = (size_t)g.classes_valid * (size_t)wte->d[1];
  memset(params + wte->off + real, 0, (wte->n - real) * sizeof *params);
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (llmc) weights_write_llmc(path, &g, params, 0);
  else weights_write_safetensors(path, &g, params, 0);
  weights_read(path, &g, again);
  if (memcmp(params, again, g.params.total * sizeof *params) != 0) abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  /* the writers sync their files (weights_out_commit): in memory that costs nothing, on a disk it
   * holds the harness to a few inputs a second */
  if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0) setenv("TMPDIR", "/dev/shm", 0);
  MPI_Init(argc, argv);
  comm_world(&world);
  fuzz_init();
  gpt2_dims_t d = {.L = 2, .C = 8, .NH = 2, .maxT = 4, .V = 20, .Vp = 24};
  gpt2_graph(&d, 0, &g);
  params = slab_alloc(&g.params);
  again = slab_alloc(&g.params);
  const char *seed_dir = getenv("SURGE_FUZZ_SEED_DIR");
  if (seed_dir) {
    rng_t r;
    rng_seed_stream(&r, 11, 0, 0);
    rng_fill_normal(&r, params, g.params.total, 0.0f, 0.5f);
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", seed_dir);
    weights_write_safetensors(path, &g, params, 0);
    snprintf(path, sizeof path, "%s/bf16.safetensors", seed_dir);
    weights_write_safetensors(path, &g, params, 1);
    snprintf(path, sizeof path, "%s/model.bin", seed_dir);
    weights_write_llmc(path, &g, params, 0);
    snprintf(path, sizeof path, "%s/bf16.bin", seed_dir);
    weights_write_llmc(path, &g, params, 1);
    snprintf(path, sizeof path, "%s/model.h5", seed_dir);
    weights_write_h5(path, &g, params, &world);
    MPI_Finalize();
    exit(0);
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file(data, size, "weights");
  if (FUZZ_TRY()) {
    gpt2_dims_t d;
    weights_gpt2_dims(path, &d);
  }
  fuzz_h5_close_all();
  fuzz_fds_close();
  if (FUZZ_TRY()) {
    weights_read(path, &g, params);
    round_trip(fuzz_dir(), "again.safetensors", 0);
    round_trip(fuzz_dir(), "again.bin", 1);
  }
  fuzz_h5_close_all();
  fuzz_fds_close();
  return 0;
}
