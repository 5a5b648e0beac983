/* Training throughput of each zoo model on one rank with one BLAS thread, against OpenBLAS SGEMM
 * on the model's own GEMM shapes measured in the same run.
 *
 *   bench_models [MODEL ...]      (default: mlp vgg-mini resnet-mini gpt)
 *
 * For each model: a short run on synthetic data records every GEMM call of one training step
 * (through a recording copy of the cpu backend), then times those same GEMMs alone. The ratio
 * "model GFLOP/s / SGEMM GFLOP/s" says how much of the GEMM rate the whole step keeps; the layer
 * FLOP counts (graph_train_flops_per_sample) give the model's rate. Peak resident memory is
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

/* Resident memory now (MiB), from /proc/self/statm. */
static double rss_now_mib(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

static void bench_one(const char *model) {
  const char *text = deck_for(model);
  if (!text) surge_input_error("unknown model %s (mlp, vgg-mini, resnet-mini, gpt)", model);
  char full[1024];
  snprintf(full, sizeof full, "[run]\nname = bench\nsteps = 1000\n[data]\nsource = synthetic\nsynthetic_samples = 2048\n"
           "[backend]\nname = cpu\nthreads = 1\n%s", text);
  config_t cfg;
  deck_parse(full, "bench", 0, NULL, &cfg, NULL);
  float warm[64] = {0}; /* one GEMM first, so OpenBLAS's workspace is part of the baseline */
  backend_cpu.gemm(0, 0, 4, 4, 4, 1.0f, warm, 4, warm + 16, 4, 0.0f, warm + 32, 4);
  double baseline = rss_now_mib(); /* MPI, HDF5, OpenBLAS and the program itself */
  comm_t world;
  comm_world(&world);
  trainer_t t;
  trainer_init(&t, &cfg, NULL, &world);
  backend_t rec = *t.be;
  rec.gemm = rec_gemm;
  rec.gemm_strided = rec_gemm_strided;
  t.layout->m->be = &rec;
  t.be = &rec;

  trainer_step(&t, 0); /* warm-up */
  recording = 1;
  trainer_step(&t, 0);
  recording = 0;
  int steps = 0;
  double t0 = surge_now(), sec = 0, phase[4] = {0, 0, 0, 0};
  while (steps < 3 || (sec = surge_now() - t0) < 3.0) {
    train_stats_t s = trainer_step(&t, 0);
    phase[0] += s.phase[PHASE_DATA], phase[1] += s.phase[PHASE_FORWARD], phase[2] += s.phase[PHASE_BACKWARD];
    phase[3] += s.phase[PHASE_OPTIMIZER];
    steps++;
  }
  sec /= steps;
  struct rusage ru; /* before the GEMM timing allocates its own operands */
  getrusage(RUSAGE_SELF, &ru);
  double gemm_flops, gemm_sec = time_gemms(&gemm_flops);
  double model_flops = graph_train_flops_per_sample(&t.g) * (double)cfg.global_batch;

  double peak = (double)ru.ru_maxrss / 1024.0;
  size_t P = t.g.params.total;
  int moments = strcmp(cfg.optimizer, "adamw") == 0 ? 2 : 1;
  double need = 4.0 * ((double)P * (2 + moments) + (double)t.layout->m->act_floats) / 1048576.0;
  double compute = sec - phase[0] / steps; /* the step without fetching the batch */
  double sgemm = gemm_flops / gemm_sec;
  printf("%-12s %8zu %5ld %9.1f %8.2f %8.2f %8.2f %6.1f%% %6.1f%% %8.1f %8.1f %8.1f %6.2f\n", model, P,
         cfg.global_batch, (double)cfg.global_batch / sec, model_flops / sec / 1e9, model_flops / compute / 1e9,
         sgemm / 1e9, 100.0 * model_flops / sec / sgemm, 100.0 * model_flops / compute / sgemm, peak, baseline,
         need, (peak - baseline) / need);
  printf("%-12s step %.2f ms: data %.0f%%, forward %.0f%%, backward %.0f%%, optimizer %.0f%%\n", "", 1e3 * sec,
         100 * phase[0] / steps / sec, 100 * phase[1] / steps / sec, 100 * phase[2] / steps / sec,
         100 * phase[3] / steps / sec);
  fflush(stdout);
  trainer_free(&t);
  comm_free(&world);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  const char *all[] = {"mlp", "vgg-mini", "resnet-mini", "gpt"};
  int n = argc > 1 ? argc - 1 : 4;
  const char **models = argc > 1 ? (const char **)argv + 1 : all;
  printf("# one rank, one BLAS thread, synthetic data. SGEMM: OpenBLAS alone on the GEMM shapes one training\n"
         "# step of the model runs (recorded), timed in the same run. step: forward + backward + optimizer +\n"
         "# fetching the batch; compute: the step without the fetch. GFLOP/s from the layer FLOP counts\n"
         "# (forward, input and weight gradients). Memory: peak RSS; base: RSS before the model existed (MPI,\n"
         "# libraries); need: params + grads + optimizer moments + activations and their grads;\n"
         "# ratio: (peak - base) / need.\n");
  printf("%-12s %8s %5s %9s %8s %8s %8s %7s %7s %8s %8s %8s %6s\n", "model", "params", "batch", "samples/s",
         "step", "compute", "SGEMM", "step/", "comp/", "peak MiB", "base MiB", "need MiB", "ratio");
  printf("%-12s %8s %5s %9s %8s %8s %8s %7s %7s %8s %8s %8s %6s\n", "", "", "", "", "GFLOP/s", "GFLOP/s",
         "GFLOP/s", "SGEMM", "SGEMM", "", "", "", "");
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
