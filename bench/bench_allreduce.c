/* Allreduce bandwidth in the nccl-tests style: the comm layer's comm_allreduce_sum (default 4 MiB
 * buckets) against a plain MPI_Allreduce on a duplicate of MPI_COMM_WORLD, both in this run,
 * interleaved per size (raw, comm, comm, raw, raw, comm, ...), float32 sums from 1 KiB to 64 MiB.
 *
 *   mpiexec -n N bench/bench_allreduce [max_bytes]
 *
 * time: mean seconds per call on each rank, then the max over ranks. algbw = bytes / time,
 * busbw = algbw * 2(n-1)/n (the traffic per rank of a bandwidth-optimal allreduce). #wrong: the
 * elements, over all ranks, that differ from the exact sum after one allreduce of small integers.
 * comm/raw: comm busbw over raw busbw (= raw time over comm time). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "core/error.h"

enum { ROUNDS = 6 };  // blocks per method, alternating raw/comm order so drift hits both alike
static const double SECONDS_PER_METHOD = 0.2;

typedef struct method {
  MPI_Comm raw;  /* the raw method's communicator */
  comm_t *comm;  /* the comm layer's (NULL for raw) */
} method_t;

static void allreduce_with(const method_t *m, float *buf, size_t n) {
  if (m->comm) {
    comm_allreduce_sum(m->comm, buf, n, TRAFFIC_DP);
  } else if (MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, m->raw) != MPI_SUCCESS) {
    surge_runtime_error("MPI_Allreduce failed in the raw baseline");
  }
}

static double max_over_ranks(MPI_Comm comm, double x) {
  MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_MAX, comm);
  return x;
}

/* Rank r's element i: a small integer, so the float sum over ranks is exact. */
static float known_value(int rank, size_t i) { return (float)((int)((i + (size_t)rank * 5) % 17) - 8); }

/* Elements wrong over all ranks after one allreduce of known values. */
static long long count_wrong(const method_t *m, MPI_Comm world, float *buf, size_t n, int rank, int size) {
  for (size_t i = 0; i < n; i++) buf[i] = known_value(rank, i);
  allreduce_with(m, buf, n);
  long long wrong = 0;
  for (size_t i = 0; i < n; i++) {
    float want = 0;
    for (int r = 0; r < size; r++) want += known_value(r, i);
    wrong += buf[i] != want;
  }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, world);
  return wrong;
}

/* Seconds of `iters` back-to-back allreduces on this rank, started together. */
static double time_block(const method_t *m, MPI_Comm world, float *buf, size_t n, int iters) {
  MPI_Barrier(world);
  double start = MPI_Wtime();
  for (int i = 0; i < iters; i++) allreduce_with(m, buf, n);
  return MPI_Wtime() - start;
}

static void print_row_part(size_t bytes, double seconds, int size, long long wrong) {
  double algbw = (double)bytes / seconds / 1e9;
  double busbw = algbw * 2.0 * (size - 1) / size;
  printf(" %10.1f %8.3f %8.3f %6lld |", seconds * 1e6, algbw, busbw, wrong);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  size_t max_bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)64 << 20;
  MPI_Comm world;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  int rank, size;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  comm_t c;
  comm_world(&c);
  method_t raw = {world, NULL}, layer = {MPI_COMM_NULL, &c};

  float *buf = xmalloc(max_bytes < 4 ? 4 : max_bytes);
  if (rank == 0) {
    printf("# allreduce float32 sum, %d ranks: raw MPI_Allreduce vs comm_allreduce_sum (%zu MiB buckets)\n", size,
           c.bucket_bytes >> 20);
    printf("# time: mean per call, max over ranks; GB/s = 1e9 B/s; busbw = algbw*2(n-1)/n\n");
    printf("# %10s %10s %6s | %10s %8s %8s %6s | %10s %8s %8s %6s | %8s\n", "size(B)", "count", "iters", "raw(us)",
           "algbw", "busbw", "#wrong", "comm(us)", "algbw", "busbw", "#wrong", "comm/raw");
  }
  double ratio_sum = 0;
  int ratio_sizes = 0;
  for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
    size_t n = bytes / sizeof(float);
    long long wrong_raw = count_wrong(&raw, world, buf, n, rank, size);
    long long wrong_comm = count_wrong(&layer, world, buf, n, rank, size);
    memset(buf, 0, bytes);  // timing on zeros: sums stay finite however many calls run
    // warm-up, and the per-block iteration count from it (the same on every rank)
    time_block(&raw, world, buf, n, 2);
    time_block(&layer, world, buf, n, 2);
    double warm = max_over_ranks(world, time_block(&raw, world, buf, n, 1));
    int per_block = (int)ceil(SECONDS_PER_METHOD / ROUNDS / (warm > 1e-9 ? warm : 1e-9));
    if (per_block > 100000) per_block = 100000;
    double seconds_raw = 0, seconds_comm = 0;
    for (int round = 0; round < ROUNDS; round++) {
      const method_t *first = round % 2 ? &layer : &raw, *second = round % 2 ? &raw : &layer;
      double a = time_block(first, world, buf, n, per_block), b = time_block(second, world, buf, n, per_block);
      seconds_raw += first == &raw ? a : b;
      seconds_comm += first == &raw ? b : a;
    }
    double t_raw = max_over_ranks(world, seconds_raw / (ROUNDS * per_block));
    double t_comm = max_over_ranks(world, seconds_comm / (ROUNDS * per_block));
    double ratio = t_raw / t_comm;
    if (bytes >= (size_t)1 << 20) {
      ratio_sum += ratio;
      ratio_sizes++;
    }
    if (rank == 0) {
      printf("  %10zu %10zu %6d |", bytes, n, ROUNDS * per_block);
      print_row_part(bytes, t_raw, size, wrong_raw);
      print_row_part(bytes, t_comm, size, wrong_comm);
      printf(" %8.3f\n", ratio);
      fflush(stdout);
    }
  }
  if (rank == 0 && ratio_sizes > 0)
    printf("# comm/raw busbw, mean over sizes >= 1 MiB (%d sizes): %.3f\n", ratio_sizes, ratio_sum / ratio_sizes);
  free(buf);
  comm_free(&c);
  MPI_Comm_free(&world);
  MPI_Finalize();
  return 0;
}
