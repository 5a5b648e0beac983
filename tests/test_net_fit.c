/* The profiler's alpha-beta fit (burst_fit_alpha_beta, doc/burst.md): an ideal link gives its
 * latency and bandwidth back; a link shaped by a token bucket (small messages pass at once, as on
 * the emulated cluster, doc/cluster.md) still gives the shaped rate; noise that makes the bulk
 * slope non-positive falls back to the largest message alone; too few samples are refused. */
#include <math.h>

#include "burst/profiler.h"
#include "tap.h"

#define NEAR(a, b, tol) (fabs((double)(a) - (double)(b)) <= (tol) * fabs((double)(b)))

/* the profiler's sizes, 4 bytes to 4 MiB */
static const double sizes[] = {4, 256, 4096, 65536, 262144, 1048576, 4194304};

/* t(b) = alpha + max(0, b - bucket) / bytes_per_us: a link of that rate behind a token bucket */
static burst_net_samples_t link_samples(double alpha, double bytes_per_us, double bucket) {
  burst_net_samples_t s = {.n = 7};
  for (int i = 0; i < s.n; i++) {
    s.bytes[i] = sizes[i];
    s.us[i] = alpha + (sizes[i] > bucket ? sizes[i] - bucket : 0) / bytes_per_us;
  }
  return s;
}

int main(void) {
  double alpha, slope;
  burst_net_samples_t s = link_samples(5, 100, 0);
  int rc = burst_fit_alpha_beta(&s, &alpha, &slope);
  tap_ok(rc == 0 && NEAR(alpha, 5, 1e-9) && NEAR(1 / slope, 100, 1e-9),
         "an ideal link, 5 us + bytes / 100 bytes/us: alpha %.6g us, beta %.6g bytes/us", alpha, 1 / slope);

  /* 100 Mbit/s = 12.5 bytes/us behind a 64 KiB bucket: up to 64 KiB costs only the latency (a
   * fit that weighs every size alike would find the bandwidth of no link at all); alpha is the
   * 4-byte time less 4 bytes at the fitted rate */
  s = link_samples(8, 12.5, 65536);
  rc = burst_fit_alpha_beta(&s, &alpha, &slope);
  tap_ok(rc == 0 && NEAR(alpha, 8 - 4 / 12.5, 1e-9) && NEAR(1 / slope, 12.5, 1e-9),
         "100 Mbit/s behind a 64 KiB token bucket: alpha %.6g us, beta %.6g bytes/us (12.5)", alpha, 1 / slope);

  /* noise: the largest message faster than the one before it */
  s = link_samples(5, 100, 0);
  s.us[6] = s.us[4];
  s.us[5] = 2 * s.us[6];
  rc = burst_fit_alpha_beta(&s, &alpha, &slope);
  tap_ok(rc == 0 && NEAR(slope, s.us[6] / s.bytes[6], 1e-12) && alpha >= 0,
         "a non-positive bulk slope falls back to the largest message: %.6g bytes/us, alpha %.6g us", 1 / slope, alpha);

  s.n = 1;
  tap_ok(burst_fit_alpha_beta(&s, &alpha, &slope) == -1, "one sample is refused");
  s = link_samples(5, 100, 0);
  s.us[6] = 0;
  tap_ok(burst_fit_alpha_beta(&s, &alpha, &slope) == -1, "a zero time for the largest message is refused");
  return tap_done();
}
