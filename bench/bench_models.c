/* Training throughput of each zoo model on one rank with one BLAS thread, against a large square
 * SGEMM of the cpu backend (the machine's practical peak: OpenBLAS, or the backend's own AVX-512
 * kernel where backend.gemm = auto takes it, cpu_gemm.c) measured in the same run, with the data-parallel
 * speed-up at 2 ranks in the same table.
 *
 *   bench_models [--dp MODEL=R1,R2 ...] [MODEL ...]   (default: mlp vgg-mini resnet-mini gpt)
 *   bench_models --rate MODEL                           (under mpiexec -n N: samples/s on N ranks)
 *
 * For each model: a short run on synthetic data records every GEMM call of one training step
 * (through a recording copy of the cpu backend), then times those same GEMMs alone ("shapes": what
 * the backend's GEMM reaches on the model's own shapes), and a 2048^3 SGEMM right after the model
 * ("square").
 * The layer FLOP counts (graph_train_flops_per_sample) give the model's rate. Peak resident memory
 * is compared with parameters + gradients + optimizer moments + activations, workspace included.
 * Each model runs in a child process so its peak memory is its own. The --dp rates come from
 * --rate runs on 1 and 2 ranks (bench/bench_models.sh measures them and passes them on).
 * BENCH_SECONDS (default 3) is how long each model's steps are timed (tests run it with 0.1).
 * BENCH_PHASES set: --rate also prints rank 0's milliseconds a step per phase on stderr. BENCH_SIMD,
 * BENCH_GEMM, BENCH_PRECISION, BENCH_THREADS and BENCH_ACTIVATIONS set the deck's [backend] simd, gemm,
 * precision, threads and activations (bench_bf16.sh; the deck's check refuses a bad value, with the variable's
 * text in it). */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/timer.h"
#include "io/deck.h"
#include "io/log_format.h"
#include "optim/optim.h"
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

/* A linear layer's forward is the GEMM x w^T however the backend computes it. */
static void rec_linear_fwd(int rows, int out, int in, const float *x, const float *w, const uint16_t *w16,
                           const float *b, float *y, float *ws, size_t ws_n) {
  record(0, 1, rows, out, in, 1);
  backend_cpu.linear_fwd(rows, out, in, x, w, w16, b, y, ws, ws_n);
}

/* Seconds of CPU time this process has used: the 1-rank timings use it, so other jobs sharing the
 * machine slow the measurement less than they would wall-clock time (this is one thread; the
 * caches are still shared). */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
    double t0 = cpu_now();
    for (int r = 0; r < reps; r++)
      backend_cpu.gemm_strided(s->ta, s->tb, s->M, s->N, s->K, 1.0f, A, lda, (size_t)s->M * s->K, B, ldb,
                               (size_t)s->K * s->N, 0.0f, C, s->N, (size_t)s->M * s->N, s->batch);
    double per_call = (cpu_now() - t0) / reps;
    sec += per_call * (double)s->calls;
    flops += f * (double)s->calls;
    backend_cpu.free(A), backend_cpu.free(B), backend_cpu.free(C);
  }
  *flops_out = flops;
  return sec;
}

/* GFLOP/s of a large square SGEMM (n = 2048, best of 3 timings of 2 calls each): the baseline. */
static double square_sgemm_gflops(void) {
  const int n = 2048;
  size_t nn = (size_t)n * n;
  float *A = backend_cpu.alloc(nn), *B = backend_cpu.alloc(nn), *C = backend_cpu.alloc(nn);
  for (size_t j = 0; j < nn; j++) A[j] = (float)(j % 7) * 0.1f, B[j] = (float)(j % 5) * 0.1f;
  backend_cpu.gemm(0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
  double best = 1e30;
  for (int r = 0; r < 3; r++) {
    double t0 = cpu_now();
    for (int k = 0; k < 2; k++) backend_cpu.gemm(0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
    double t = (cpu_now() - t0) / 2;
    if (t < best) best = t;
  }
  backend_cpu.free(A), backend_cpu.free(B), backend_cpu.free(C);
  return 2.0 * n * (double)n * n / best / 1e9;
}

static const char *deck_for(const char *model) {
  if (strcmp(model, "mlp") == 0)
    return "[model]\nzoo = mlp\nmlp_hidden = 512,512\n[train]\nglobal_batch = 128\n";
  if (strcmp(model, "vgg-mini") == 0)
    return "[model]\nzoo = vgg-mini\nvgg_channels = 32,64\nvgg_fc = 256\n[train]\nglobal_batch = 128\nlr = 0.005\n";
  if (strcmp(model, "resnet-mini") == 0)
    return "[model]\nzoo = resnet-mini\n[train]\nglobal_batch = 64\nlr = 0.005\n";
  if (strcmp(model, "gpt") == 0)
    return "[model]\nzoo = gpt\ngpt_layers = 4\ngpt_width = 256\ngpt_heads = 4\ngpt_context = 128\n"
           "[train]\nglobal_batch = 16\noptimizer = adamw\nlr = 3e-4\n";
  return NULL;
}

/* Seconds of steps to time: BENCH_SECONDS, default 3. */
static double bench_seconds(void) {
  const char *v = getenv("BENCH_SECONDS");
  double s = v ? atof(v) : 3.0;
  if (!(s > 0 && s <= 3600)) surge_input_error("BENCH_SECONDS=%s: expected seconds in (0, 3600]", v);
  return s;
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

/* A deck for `model` on synthetic data, BENCH_THREADS threads (default 1), the kernels' width BENCH_SIMD (default
 * auto; the deck's check refuses other values and widths this CPU lacks) and the SGEMM BENCH_GEMM
 * (auto or blas, default auto). The CNNs' learning rate is one that
 * trains on the synthetic data for as many steps as BENCH_SECONDS may ask (the default 0.05 made
 * vgg-mini's loss NaN at step 55 on 2 ranks, which a 3-second run reached once the step got
 * faster). */
static void bench_config(const char *model, config_t *cfg) {
  const char *text = deck_for(model), *simd = getenv("BENCH_SIMD"), *gemm = getenv("BENCH_GEMM"),
             *precision = getenv("BENCH_PRECISION"), *threads = getenv("BENCH_THREADS"),
             *activations = getenv("BENCH_ACTIVATIONS");
  if (!text) surge_input_error("unknown model %s (mlp, vgg-mini, resnet-mini, gpt)", model);
  if (!simd || !*simd) simd = "auto";
  if (!gemm || !*gemm) gemm = "auto";
  if (!precision || !*precision) precision = "fp32";
  if (!threads || !*threads) threads = "1";
  if (!activations || !*activations) activations = "auto";
  if (strlen(simd) > 16) surge_input_error("BENCH_SIMD=%s: expected auto, avx512, avx2 or none", simd);
  if (strlen(gemm) > 16) surge_input_error("BENCH_GEMM=%s: expected auto or blas", gemm);
  if (strlen(precision) > 16) surge_input_error("BENCH_PRECISION=%s: expected fp32 or bf16", precision);
  if (strlen(threads) > 8) surge_input_error("BENCH_THREADS=%s: expected a thread count", threads);
  if (strlen(activations) > 16) surge_input_error("BENCH_ACTIVATIONS=%s: expected auto or float32", activations);
  char full[1024];
  snprintf(full, sizeof full,
           "[run]\nname = bench\nsteps = 1000\n[data]\nsource = synthetic\nsynthetic_samples = 2048\n"
           "[backend]\nname = cpu\nthreads = %s\nsimd = %s\ngemm = %s\nprecision = %s\nactivations = %s\n%s",
           threads, simd, gemm, precision, activations, text);
  deck_parse(full, "bench", 0, NULL, cfg, NULL);
}

/* Data-parallel rates of one model measured by --rate runs (0 when not given). */
typedef struct dp_rate {
  char model[32];
  double r1, r2;
} dp_rate_t;

static void bench_one(const char *model, const dp_rate_t *dp) {
  config_t cfg;
  bench_config(model, &cfg);
  /* One large GEMM first, so OpenBLAS's packing buffers are resident in the baseline, as MPI's and
   * HDF5's are: a small one takes OpenBLAS's small-matrix path and leaves them untouched. */
  const int w = 1024;
  float *warm = xcalloc((size_t)3 * w * w, sizeof(float)); /* A, B, C: (w, w) each, freed below */
  backend_cpu.gemm(0, 0, w, w, w, 1.0f, warm, w, warm + (size_t)w * w, w, 0.0f, warm + (size_t)2 * w * w, w);
  free(warm);
  comm_t world; /* creating the communicator takes 3.4 MiB (Open MPI's): MPI's memory, not the model's */
  comm_world(&world);
  double baseline = rss_now_mib(); /* MPI, HDF5, OpenBLAS and the program itself */
  trainer_t t;
  trainer_init(&t, &cfg, NULL, &world);
  backend_t rec = *t.be;
  rec.gemm = rec_gemm;
  rec.gemm_strided = rec_gemm_strided;
  rec.linear_fwd = rec_linear_fwd;
  t.layout->m->be = &rec;
  t.be = &rec;

  trainer_step(&t, 0); /* warm-up */
  recording = 1;
  trainer_step(&t, 0);
  recording = 0;
  int steps = 0;
  double t0 = cpu_now(), w0 = surge_now(), sec = 0, phase[4] = {0, 0, 0, 0}; /* phases: wall time */
  const double seconds = bench_seconds();
  while (steps < 3 || (sec = cpu_now() - t0) < seconds) {
    train_stats_t s = trainer_step(&t, 0);
    phase[0] += s.phase[PHASE_DATA], phase[1] += s.phase[PHASE_FORWARD], phase[2] += s.phase[PHASE_BACKWARD];
    phase[3] += s.phase[PHASE_OPTIMIZER];
    steps++;
  }
  const double wall = surge_now() - w0;
  sec /= steps;
  struct rusage ru; /* before the GEMM timings allocate their own operands */
  getrusage(RUSAGE_SELF, &ru);
  double square = square_sgemm_gflops(); /* right after the model's steps */
  double gemm_flops, gemm_sec = time_gemms(&gemm_flops);
  double model_flops = graph_train_flops_per_sample(&t.g) * (double)cfg.global_batch;

  double peak = (double)ru.ru_maxrss / 1024.0;
  size_t P = t.g.params.total;
  int moments = strcmp(optim_opts(&cfg)->name, "adamw") == 0 ? 2 : 1;
  double need = 4.0 * ((double)P * (2 + moments) + (double)t.layout->m->act_floats) / 1048576.0;
  double compute = sec * (1.0 - phase[0] / wall); /* the step without fetching the batch */
  double shapes = gemm_flops / gemm_sec / 1e9, step_gf = model_flops / sec / 1e9;
  char dpcol[48] = "      -       -      -";
  if (dp && dp->r1 > 0) snprintf(dpcol, sizeof dpcol, "%7.1f %7.1f %5.2fx", dp->r1, dp->r2, dp->r2 / dp->r1);
  printf("%-12s %5ld %9.1f %8.1f %8.1f %7.1f %6.3f %6.3f %7.1f %6.3f %s %7.1f %7.1f %5.2f\n", model,
         cfg.global_batch, (double)cfg.global_batch / sec, step_gf, model_flops / compute / 1e9, square, step_gf / square,
         model_flops / compute / 1e9 / square, shapes, step_gf / shapes, dpcol, peak - baseline, need,
         (peak - baseline) / need);
  printf("%-12s step %.2f ms: data %.0f%%, forward %.0f%%, backward %.0f%%, optimizer %.0f%%\n", "", 1e3 * sec,
         100 * phase[0] / wall, 100 * phase[1] / wall, 100 * phase[2] / wall, 100 * phase[3] / wall);
  fflush(stdout);
  trainer_free(&t);
  comm_free(&world);
}

/* --rate MODEL: samples/s of data-parallel training over all ranks of the job (rank 0 prints). The
 * number of timed steps (about BENCH_SECONDS worth, at least 3) is decided from the warm-up on rank 0. */
static void rate_one(const char *model) {
  config_t cfg;
  bench_config(model, &cfg);
  comm_t world;
  comm_world(&world);
  trainer_t t;
  trainer_init(&t, &cfg, NULL, &world);
  trainer_step(&t, 0);
  double t0 = surge_now();
  trainer_step(&t, 0);
  int steps = (int)(bench_seconds() / (surge_now() - t0 + 1e-9)) + 1;
  if (steps < 3) steps = 3;
  MPI_Bcast(&steps, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = surge_now();
  double phase[PHASE_COUNT] = {0}, rest = 0; /* this rank's seconds per phase, and outside them */
  for (int i = 0; i < steps; i++) {
    train_stats_t s = trainer_step(&t, 0);
    rest += s.seconds;
    for (int p = 0; p < PHASE_COUNT; p++) phase[p] += s.phase[p], rest -= s.phase[p];
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double sec = surge_now() - t0;
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) printf("%.3f\n", (double)cfg.global_batch * steps / sec);
  if (rank == 0 && getenv("BENCH_PHASES")) { /* where rank 0's step goes, in ms, on stderr */
    fprintf(stderr, "# %s, rank 0 of the run, ms a step:", model);
    for (int p = 0; p <= PHASE_OPTIMIZER; p++) fprintf(stderr, " %s %.3f", log_phase_info[p].name, 1e3 * phase[p] / steps);
    fprintf(stderr, " other %.3f\n", 1e3 * rest / steps);
  }
  trainer_free(&t);
  comm_free(&world);
}

/* Parse "MODEL=R1,R2" into d; exit 2 with a hint when malformed. */
static void parse_dp(const char *arg, dp_rate_t *d) {
  const char *eq = strchr(arg, '=');
  if (!eq || (size_t)(eq - arg) >= sizeof d->model || sscanf(eq + 1, "%lf,%lf", &d->r1, &d->r2) != 2 || d->r1 <= 0 ||
      d->r2 <= 0)
    surge_input_error("--dp %s: expected MODEL=R1,R2 with positive samples/s on 1 and 2 ranks", arg);
  memcpy(d->model, arg, (size_t)(eq - arg));
  d->model[eq - arg] = '\0';
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  if (argc == 3 && strcmp(argv[1], "--rate") == 0) {
    rate_one(argv[2]);
    MPI_Finalize();
    return 0;
  }
  const char *all[] = {"mlp", "vgg-mini", "resnet-mini", "gpt"}, *models[16];
  dp_rate_t dp[16];
  int n = 0, ndp = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--dp") == 0 && i + 1 < argc) {
      if (ndp == 16) surge_input_error("more than 16 --dp rates");
      parse_dp(argv[++i], &dp[ndp++]);
    } else {
      if (n == 16) surge_input_error("more than 16 models");
      models[n++] = argv[i];
    }
  }
  if (n == 0)
    for (n = 0; n < 4; n++) models[n] = all[n];
  for (int i = 0; i < n; i++) /* here, not in a forked child, where an abort would not end the job */
    if (!deck_for(models[i])) surge_input_error("unknown model %s (mlp, vgg-mini, resnet-mini, gpt)", models[i]);
  printf("# one rank, one BLAS thread, synthetic data; 1-rank times are this process's CPU time. square: a\n"
         "# 2048^3 SGEMM of the backend timed right after the model (the practical peak); /sq: GFLOP/s over it.\n"
         "# shapes: the backend's GEMM alone on the GEMMs one step of the model runs (recorded); /sh: step GFLOP/s over\n"
         "# it. step: forward + backward + optimizer + fetching the\n"
         "# batch; compute: the step without the fetch. GFLOP/s from the layer FLOP counts. dp: samples/s of\n"
         "# data parallelism on 1 and 2 ranks (one BLAS thread each, same global batch) and the speed-up.\n"
         "# MiB: peak RSS above the RSS before the model existed; need: params + grads + optimizer moments +\n"
         "# activations, their gradients and workspace; ratio: MiB / need.\n");
  printf("%-12s %5s %9s %8s %8s %7s %6s %6s %7s %6s %7s %7s %6s %7s %7s %5s\n", "model", "batch", "samples/s",
         "step", "compute", "square", "step", "comp", "shapes", "step", "dp 1", "dp 2", "dp", "MiB", "need", "ratio");
  printf("%-12s %5s %9s %8s %8s %7s %6s %6s %7s %6s %7s %7s %6s %7s %7s %5s\n", "", "", "", "GFLOP/s", "GFLOP/s",
         "GFLOP/s", "/sq", "/sq", "GFLOP/s", "/sh", "smp/s", "smp/s", "x", "", "MiB", "");
  fflush(stdout);
  for (int i = 0; i < n; i++) {
    const dp_rate_t *mine = NULL;
    for (int k = 0; k < ndp; k++)
      if (strcmp(dp[k].model, models[i]) == 0) mine = &dp[k];
    pid_t pid = fork();
    if (pid == 0) {
      bench_one(models[i], mine);
      _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) surge_runtime_error("benchmark of %s failed", models[i]);
  }
  MPI_Finalize();
  return 0;
}
