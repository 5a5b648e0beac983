/* Training throughput of each zoo model on one rank with one BLAS thread, against OpenBLAS SGEMM
 * on the model's own GEMM shapes measured in the same run.
 *
 *   bench_models [MODEL ...]      (default: mlp vgg-mini resnet-mini gpt)
 *
 * For each model: a short run on synthetic data records every GEMM call of one training step
 * (through a recording copy of the cpu backend), then times those same GEMMs alone. The ratio
 * "model GFLOP/s / SGEMM GFLOP/s" says how much of the GEMM rate the whole step keeps; the layer
 * FLOP counts (forward x3 for forward + backward) give the model's rate. Peak resident memory is
 * compared with parameters + gradients + optimizer moments + activations. Each model runs in a
 * child process so its peak memory is its own. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/timer.h"
#include "io/deck.h"
#include "train/train.h"

/* ---- a backend that records the GEMM shapes of a step */
typedef struct gemm_shape {
  int ta, tb, M, N, K, batch;
  long calls;
} gemm_shape_t;

#define MAX_SHAPES 256
static gemm_shape_t shapes[MAX_SHAPES];
static int nshapes;
static int recording;

static void record(int ta, int tb, int M, int N, int K, int batch) {
  if (!recording) return;
  for (int i = 0; i < nshapes; i++) {
    gemm_shape_t *s = &shapes[i];
    if (s->ta == ta && s->tb == tb && s->M == M && s->N == N && s->K == K && s->batch == batch) {
      s->calls++;
      return;
    }
  }
  if (nshapes < MAX_SHAPES) shapes[nshapes++] = (gemm_shape_t){ta, tb, M, N, K, batch, 1};
}

static void rec_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                     int ldb, float beta, float *C, int ldc) {
  record(ta, tb, M, N, K, 1);
  backend_cpu.gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static void rec_gemm_strided(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, size_t sA,
                             const float *B, int ldb, size_t sB, float beta, float *C, int ldc, size_t sC,
                             int batch) {
  record(ta, tb, M, N, K, batch);
  backend_cpu.gemm_strided(ta, tb, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch);
}

/* Seconds per step of the recorded GEMMs run alone (dense operands of the recorded shapes). */
static double time_gemms(double *flops_out) {
  double flops = 0, sec = 0;
  for (int i = 0; i < nshapes; i++) {
    gemm_shape_t *s = &shapes[i];
    size_t na = (size_t)s->M * s->K * s->batch, nb = (size_t)s->K * s->N * s->batch, nc = (size_t)s->M * s->N * s->batch;
    float *A = backend_cpu.alloc(na), *B = backend_cpu.alloc(nb), *C = backend_cpu.alloc(nc);
    for (size_t j = 0; j < na; j++) A[j] = (float)(j % 7) * 0.1f;
    for (size_t j = 0; j < nb; j++) B[j] = (float)(j % 5) * 0.1f;
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    double f = 2.0 * s->M * s->N * (double)s->K * s->batch;
    int reps = (int)(2e8 / f) + 3; /* about 0.2 GFLOP of work per shape */
    backend_cpu.gemm_strided(s->ta, s->tb, s->M, s->N, s->K, 1.0f, A, lda, (size_t)s->M * s->K, B, ldb,
                             (size_t)s->K * s->N, 0.0f, C, s->N, (size_t)s->M * s->N, s->batch);
    double t0 = surge_now();
    for (int r = 0; r < reps; r++)
      backend_cpu.gemm_strided(s->ta, s->tb, s->M, s->N, s->K, 1.0f, A, lda, (size_t)s->M * s->K, B, ldb,
                               (size_t)s->K * s->N, 0.0f, C, s->N, (size_t)s->M * s->N, s->batch);
    double per_call = (surge_now() - t0) / reps;
    sec += per_call * (double)s->calls;
    flops += f * (double)s->calls;
    backend_cpu.free(A), backend_cpu.free(B), backend_cpu.free(C);
  }
  *flops_out = flops;
  return sec;
}

static const char *deck_for(const char *model) {
  if (strcmp(model, "mlp") == 0)
    return "[model]\nzoo = mlp\nmlp_hidden = 512,512\n[train]\nglobal_batch = 128\n";
  if (strcmp(model, "vgg-mini") == 0)
    return "[model]\nzoo = vgg-mini\nvgg_channels = 32,64\nvgg_fc = 256\n[train]\nglobal_batch = 128\n";
  if (strcmp(model, "resnet-mini") == 0)
    return "[model]\nzoo = resnet-mini\n[train]\nglobal_batch = 64\n";
  if (strcmp(model, "gpt") == 0)
    return "[model]\nzoo = gpt\ngpt_layers = 4\ngpt_width = 256\ngpt_heads = 4\ngpt_context = 128\n"
           "[train]\nglobal_batch = 16\noptimizer = adamw\nlr = 3e-4\n";
  return NULL;
}

static void bench_one(const char *model) {
  const char *text = deck_for(model);
  if (!text) surge_input_error("unknown model %s (mlp, vgg-mini, resnet-mini, gpt)", model);
  char full[1024];
  snprintf(full, sizeof full, "[run]\nname = bench\nsteps = 1000\n[data]\nsource = synthetic\nsynthetic_samples = 2048\n"
           "[backend]\nname = cpu\nthreads = 1\n%s", text);
  config_t cfg;
  deck_parse(full, "bench", 0, NULL, &cfg, NULL);
  trainer_t t;
  trainer_init(&t, &cfg, NULL);
  backend_t rec = *t.be;
  rec.gemm = rec_gemm;
  rec.gemm_strided = rec_gemm_strided;
  t.m.be = &rec;
  t.be = &rec;

  trainer_step(&t); /* warm-up */
  recording = 1;
  trainer_step(&t);
  recording = 0;
  int steps = 0;
  double t0 = surge_now(), sec = 0;
  while (steps < 3 || (sec = surge_now() - t0) < 3.0) {
    trainer_step(&t);
    steps++;
  }
  sec /= steps;
  double gemm_flops, gemm_sec = time_gemms(&gemm_flops);
  double model_flops = 3.0 * graph_flops_per_sample(&t.g) * (double)cfg.global_batch;

  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double peak = (double)ru.ru_maxrss * 1024.0;
  size_t P = t.g.params.total;
  int moments = strcmp(cfg.optimizer, "adamw") == 0 ? 2 : 1;
  double need = 4.0 * ((double)P * (2 + moments) + (double)t.m.act_floats);
  printf("%-12s %9zu %6ld %9.1f %9.2f %9.2f %7.1f%% %9.1f %9.1f %7.2f %7.1f\n", model, P, cfg.global_batch,
         (double)cfg.global_batch / sec, model_flops / sec / 1e9, gemm_flops / gemm_sec / 1e9,
         100.0 * (model_flops / sec) / (gemm_flops / gemm_sec), peak / 1048576.0, need / 1048576.0, peak / need,
         peak / (double)P);
  fflush(stdout);
  trainer_free(&t);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  const char *all[] = {"mlp", "vgg-mini", "resnet-mini", "gpt"};
  int n = argc > 1 ? argc - 1 : 4;
  const char **models = argc > 1 ? (const char **)argv + 1 : all;
  printf("# one rank, one BLAS thread, synthetic data; SGEMM = OpenBLAS on the model's own GEMM shapes\n");
  printf("# step = forward + backward + optimizer; model GFLOP/s from layer FLOP counts (forward x 3)\n");
  printf("# memory: peak RSS against params + grads + optimizer moments + activations (incl. their grads)\n");
  printf("%-12s %9s %6s %9s %9s %9s %8s %9s %9s %7s %7s\n", "model", "params", "batch", "samples/s", "GFLOP/s",
         "SGEMM", "of SGEMM", "peak MiB", "need MiB", "ratio", "B/param");
  fflush(stdout);
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      bench_one(models[i]);
      _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) surge_runtime_error("benchmark of %s failed", models[i]);
  }
  MPI_Finalize();
  return 0;
}
