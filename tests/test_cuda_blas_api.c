/* cuBLAS and cuBLASLt loaded on demand (src/backend/cuda_blas_api.h), on the host in every CUDA
 * build (loading needs the toolkit's libraries, not a GPU): neither library is in the process before
 * the load, both are after it, every entry point of the table is found (so every symbol name is
 * right for the toolkit the build uses), a second load returns at once with the same table, and the
 * load costs the process the resident memory the programs no longer pay at their start; a library that
 * cannot be found and one without the entry points each fail with one line and a zeroed table. */
#include <stdio.h>
#include <string.h>

#include "backend/cuda_blas_api.h"
#include "tap.h"

/* Whether a mapping of the process names a file containing `lib`. */
static int mapped(const char *lib) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[1024];
  int found = 0;
  while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, lib) != NULL;
  if (f) fclose(f);
  return found;
}

/* Resident memory of the process in KiB (/proc/self/status VmRSS), or -1. */
static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) sscanf(line + 6, "%ld", &kib);
  if (f) fclose(f);
  return kib;
}

/* The load's two failures, each leaving a zeroed table and one line that names what is missing: a library
 * the loader cannot find (the loader's own words after it), and a library that lacks the entry points
 * (libm for both: the first missing symbol named). The cuda backend's open puts the line after "cuBLAS is
 * not usable:" with a hint (cuda.c). */
static void test_failures(void) {
  cuda_blas_api_t api, zero;
  memset(&zero, 0, sizeof zero);
  char err[512];
  memset(&api, 0x5a, sizeof api);
  int rc = cuda_blas_api_load_from("libsurge-absent.so.1", "libsurge-absent-lt.so.1", "/nonexistent", &api, err,
                                   sizeof err);
  tap_ok(rc == -1 && strstr(err, "cannot load libsurge-absent-lt.so.1: ") && strstr(err, "No such file") &&
             memcmp(&api, &zero, sizeof api) == 0,
         "a library the loader cannot find: -1, a zeroed table: %s", err);
  memset(&api, 0x5a, sizeof api);
  rc = cuda_blas_api_load_from("libm.so.6", "libm.so.6", NULL, &api, err, sizeof err);
  tap_ok(rc == -1 && strstr(err, "libm.so.6 has no cublasCreate_v2 (a cuBLAS older than the headers") &&
             memcmp(&api, &zero, sizeof api) == 0,
         "a library without the entry points: -1, a zeroed table: %s", err);
}

int main(void) {
  tap_ok(!mapped("libcublas"), "before the load no libcublas or libcublasLt is in the process");
  const long before = rss_kib();
  char err[512] = "";
  const int rc = cuda_blas_api_load(err, sizeof err);
  const long after = rss_kib();
  tap_ok(rc == 0, "cuda_blas_api_load: %s", rc == 0 ? "loaded" : err);
  tap_ok(mapped("libcublas.so.") && mapped("libcublasLt.so."), "after it both libraries are in the process");
  int entries = 0, found = 0;
#define CUDA_BLAS_COUNT(field, symbol) entries++, found += cuda_blas_api.field != NULL;
  CUDA_BLAS_ENTRIES(CUDA_BLAS_COUNT)
  CUDA_BLASLT_ENTRIES(CUDA_BLAS_COUNT)
#undef CUDA_BLAS_COUNT
  tap_ok(entries > 0 && found == entries, "every entry point found: %d of %d", found, entries);
  cuda_blas_api_t first = cuda_blas_api;
  tap_ok(cuda_blas_api_load(err, sizeof err) == 0 && memcmp(&first, &cuda_blas_api, sizeof first) == 0,
         "a second load returns the same table");
  tap_ok(after - before > 50 * 1024, "the load costs the process %.1f MiB of resident memory, which a program "
         "that never opens the cuda backend no longer pays", (after - before) / 1024.0);
  test_failures();
  return tap_done();
}
