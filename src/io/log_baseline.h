/* A foreground-only run's speed, read back from its metrics log: the baseline a multiplexed
 * foreground's slowdown is measured against ([multiplex] baseline). */
#ifndef SURGE_LOG_BASELINE_H
#define SURGE_LOG_BASELINE_H

#include <stddef.h>

/* Samples per second of the Surge log at path over its steps after the first `skip` (warm-up; all
 * steps when there are no more): the samples of those steps over their summed step time. Returns it
 * (> 0), or 0 with a reason in err (not an HDF5 file, not a Surge log, a dataset missing or
 * absurdly long, no timed step). */
double log_baseline_samples_per_sec(const char *path, long skip, char *err, size_t err_len);

#endif
