/* libkernel_times.so: where a CUDA program's GPU time goes, kernel by kernel. A CUDA injection
 * library (CUDA_INJECTION64_PATH=.../libkernel_times.so): CUPTI's activity records of every
 * kernel, copy and memset, summed by name; when the process exits, a table sorted by total time
 * goes to $KERNEL_TIMES (a file; "%p" in it becomes the process id) or else stderr:
 *   total_ms calls mean_us share name
 * and a last line with the sum of all GPU work and the span from the first start to the last end
 * (busy = sum / span: below 1, the GPU waited for the host). Used by tests/gpu/device-check.sh;
 * built by tests/gpu/build-kernel-times.sh. */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

#define MAX_NAMES 512
#define BUF_BYTES (8u << 20)

typedef struct {
  char *name;
  uint64_t ns, calls;
} entry_t;

static entry_t table[MAX_NAMES];
static int used;
static uint64_t first_start = UINT64_MAX, last_end, all_ns;
static unsigned long buffers, records; /* for the last line: what CUPTI delivered */
static char setup_error[200];           /* the first CUPTI call that failed, if one did */

static void check(CUptiResult r, const char *what) {
  if (r == CUPTI_SUCCESS || setup_error[0]) return;
  const char *why = NULL;
  cuptiGetResultString(r, &why);
  snprintf(setup_error, sizeof setup_error, "%s: %s", what, why ? why : "unknown error");
}

static void add(const char *name, uint64_t start, uint64_t end) {
  if (end < start) return;
  int i = 0;
  while (i < used && strcmp(table[i].name, name) != 0) i++;
  if (i == used) {
    if (used == MAX_NAMES) i = MAX_NAMES - 1; /* the last row gathers whatever does not fit */
    else table[used++].name = strdup(name);
  }
  table[i].ns += end - start;
  table[i].calls++;
  all_ns += end - start;
  if (start < first_start) first_start = start;
  if (end > last_end) last_end = end;
}

static void add_kernel(const char *mangled, uint64_t start, uint64_t end) {
  int status = 0;
  char *plain = __cxa_demangle(mangled, NULL, NULL, &status);
  const char *name = status == 0 && plain ? plain : mangled;
  char shortened[160];
  /* the name up to its argument list: templates' arguments stay, parameters do not; an anonymous
   * namespace is no argument list */
  static const char anon[] = "(anonymous namespace)::";
  const char *at = strstr(name, anon);
  char joined[400];
  if (at) {
    snprintf(joined, sizeof joined, "%.*s%s", (int)(at - name), name, at + sizeof anon - 1);
    name = joined;
  }
  size_t n = strcspn(name, "(");
  if (n >= sizeof shortened) n = sizeof shortened - 1;
  memcpy(shortened, name, n);
  shortened[n] = '\0';
  add(shortened, start, end);
  free(plain);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(8, BUF_BYTES);
  *size = *buffer ? BUF_BYTES : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *r = NULL;
  buffers++;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    records++;
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
      add_kernel(k->name, k->start, k->end);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
      static const char *const kinds[] = {"?", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
      char name[32];
      snprintf(name, sizeof name, "[memcpy %s]", m->copyKind < sizeof kinds / sizeof kinds[0] ? kinds[m->copyKind] : "?");
      add(name, m->start, m->end);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
      add("[memset]", m->start, m->end);
    }
  }
  free(buffer);
}

static int by_time(const void *a, const void *b) {
  const entry_t *x = a, *y = b;
  return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

static void report(void) {
  cuptiActivityFlushAll(1);
  FILE *f = stderr;
  const char *path = getenv("KERNEL_TIMES");
  char name[512];
  if (path && *path) {
    const char *p = strstr(path, "%p");
    if (p) snprintf(name, sizeof name, "%.*s%ld%s", (int)(p - path), path, (long)getpid(), p + 2);
    else snprintf(name, sizeof name, "%s", path);
    FILE *g = fopen(name, "w");
    if (g) f = g;
  }
  qsort(table, (size_t)used, sizeof table[0], by_time);
  fprintf(f, "%10s %8s %10s %6s  %s\n", "total_ms", "calls", "mean_us", "share", "name");
  for (int i = 0; i < used; i++)
    fprintf(f, "%10.3f %8llu %10.2f %5.1f%%  %s\n", table[i].ns * 1e-6, (unsigned long long)table[i].calls,
            table[i].ns * 1e-3 / (double)table[i].calls, all_ns ? 100.0 * table[i].ns / all_ns : 0.0, table[i].name);
  double span = last_end > first_start ? (double)(last_end - first_start) : 0.0;
  fprintf(f, "all GPU work %.3f ms over a span of %.3f ms (busy %.2f; %lu records in %lu buffers%s%s)\n",
          all_ns * 1e-6, span * 1e-6, span > 0 ? all_ns / span : 0.0, records, buffers, setup_error[0] ? "; " : "",
          setup_error);
  if (f != stderr) fclose(f);
}

/* A context about to be destroyed (the program's cudaDeviceReset) hands its records over first. */
static void CUPTIAPI on_resource(void *data, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *info) {
  (void)data;
  (void)info;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

int InitializeInjection(void) {
  static CUpti_SubscriberHandle subscriber;
  atexit(report);
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable (kernels)");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable (copies)");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "cuptiActivityEnable (memsets)");
  check(cuptiSubscribe(&subscriber, on_resource, NULL), "cuptiSubscribe");
  check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
        "cuptiEnableCallback");
  check(cuptiActivityFlushPeriod(200), "cuptiActivityFlushPeriod"); /* ms: records arrive while it runs */
  return 1;
}
