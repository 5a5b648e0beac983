/* What the columns of a Surge log must be, for its reader (io/log_read.c): the datasets a log of this
 * format has in each group (one missing is reported, never silently left out) and the values each
 * may hold (one out of range means the log is damaged). Columns the format does not document (a
 * newer log's) may hold any value. */
#ifndef SURGE_LOG_CHECK_H
#define SURGE_LOG_CHECK_H

#include <math.h>
#include <stddef.h>

typedef struct log_range {
  double lo, hi; /* finite values lie in [lo, hi] */
  int nan_ok;    /* NaN (no value) allowed */
  int inf_ok;    /* infinities allowed (a diverged loss, an exploding gradient) */
  int whole;     /* whole numbers only */
} log_range_t;

/* Ranges the parts' formats share. */
#define LOG_MAX_RANKS 16777216.0  /* 2^24: more ranks than any job */
#define LOG_MAX_SECONDS 1e9       /* a phase or step of 30 years is damage */
#define LOG_RANGE_ANY ((log_range_t){-INFINITY, INFINITY, 1, 1, 0})
#define LOG_RANGE_SECONDS ((log_range_t){0, LOG_MAX_SECONDS, 1, 0, 0})
#define LOG_RANGE_RATE ((log_range_t){0, INFINITY, 1, 1, 0})
#define LOG_RANGE_COUNT ((log_range_t){0, 18446744073709551616.0, 0, 0, 1})
#define LOG_RANGE_INDEX(hi) ((log_range_t){0, (hi), 0, 0, 1})

/* The largest step a log may hold: every step is a whole number a double holds exactly. */
#define LOG_MAX_STEP 9007199254740992.0 /* 2^53 */

/* The range of column `name` of `group` (a path of log_group_path, or a part's group with its
 * registered format: io/log_part.h). */
log_range_t log_column_range(const char *group, const char *name);
/* Whether a value lies in the range. */
int log_in_range(const log_range_t *r, double v);
/* The i-th numeric column (from 0) a log of this format has in group into name: 1, or 0 past the
 * last. multiplexed: the log has /multiplex (and with it the multiplexed phases of /ranks). */
int log_expected_column(const char *group, int i, int multiplexed, char *name, size_t n);

#endif
