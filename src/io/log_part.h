/* The parts of a metrics log beyond what every run has (io/log.h): a layout's plan or pipeline, a
 * compressor, multiplexing. The log's reader (io/log_read.h) names none of them: each part
 * registers how its groups look (their documented columns, in order, with the values they may
 * hold) and a reader of its own that the log's reader calls when the file has the part's group,
 * through the checked reading functions below. src/layout/log_parts.c registers every part. */
#ifndef SURGE_LOG_PART_H
#define SURGE_LOG_PART_H

#include <hdf5.h>
#include <stddef.h>

#include "io/log_check.h"
#include "io/log_format.h"
#include "io/log_read.h"

/* A group of a part: its documented columns in order (after its step scale when stepped), the
 * values each may hold, and which every log of the group has. */
typedef struct log_group_format {
  const char *group;               /* "/pipeline/events" */
  int stepped;                     /* a "step" scale comes first (and is expected) */
  int ncolumns;
  const log_series_info_t *column; /* (ncolumns) */
  const log_range_t *range;        /* (ncolumns) NULL: any value */
  int nexpected;                   /* expected[0 .. nexpected) index the columns every log has */
  const int *expected;             /* NULL: the first nexpected columns */
} log_group_format_t;

typedef struct log_reader log_reader_t; /* the log being read */

/* A part of the log: read when the file has `group`. */
typedef struct log_part {
  const char *name;       /* "plan": log_part_data's key */
  const char *group;      /* the group that says the log has the part ("/plan") */
  int nformats;
  const log_group_format_t *const *formats;
  /* Read the part (every check failing is an input error naming the dataset); L holds what the
   * log's reader has read so far (/run, /metrics, /ranks, /eval, /events). Returns its data. */
  void *(*read)(log_reader_t *r, const log_data_t *L);
  void (*free)(void *data);
} log_part_t;

/* Register a part (and its groups' formats): before log_read. Registering one twice is nothing. */
void log_part_register(const log_part_t *part);
/* The registered format of group, NULL when no part documents it. */
const log_group_format_t *log_group_format(const char *group);

/* ---- checked reading, for the parts' readers ---- */

/* How the columns of a group are read and matched up. */
typedef struct log_table_spec {
  const char *group, *prefix; /* the group's path; only names with this prefix are columns */
  int ndims;                  /* 1, or 2 for /ranks (rows, ranks) */
  int multiplexed;            /* /ranks: the multiplexed phases are expected */
  size_t scale;               /* rows of the group's scale when it has no step column (/ranks: /metrics's) */
  size_t tolerance;           /* rows a column may lack behind its scale (a writer killed during a flush) */
  size_t max_cols;            /* 2-D: read at most this many columns (the ranks of /ranks/rank) */
  int exact_cols;             /* 2-D: every column has max_cols (/ranks: the writer widens them all at once);
                               * a narrower one is damage, shown with NaN columns (short_cols) */
  int strict;                 /* every documented column must be whole (/plan, written at once) */
  int extra;                  /* a second reading of a group for its columns of another shape: none
                               * is documented (the first reading checks those) */
  int rows_share_step;        /* several rows may have the same step (/events) */
} log_table_spec_t;

/* Every numeric column of g->group whose name starts with g->prefix, in log_column_order, checked:
 * a documented column that is not a numeric dataset of the right shape, or holds a value out of
 * range, is damage (exit 2); one that is missing or far too short is kept as a column without those
 * values (missing, short_by), for the output to say so. A missing group leaves t->present 0. */
void log_reader_table(log_reader_t *r, const log_table_spec_t *g, log_table_t *t);
/* Rows a column may lack behind its step scale: one flush's worth. */
size_t log_reader_tolerance(const log_reader_t *r);
/* Whether path names an object of type (H5I_GROUP, H5I_DATASET). */
int log_reader_has(log_reader_t *r, const char *path, H5I_type_t type);
/* Open / close the group at path (it must exist). */
hid_t log_reader_group(log_reader_t *r, const char *path);
void log_reader_group_close(log_reader_t *r, hid_t g, const char *path);
/* Attributes of obj (obj_path in messages): a string with control characters escaped ("" when
 * absent); an integer in [lo, hi] (-1 when absent); a number in [lo, hi] (NaN when absent). */
void log_reader_attr_string(log_reader_t *r, hid_t obj, const char *obj_path, const char *name, char *buf, size_t n);
long long log_reader_attr_int(log_reader_t *r, hid_t obj, const char *obj_path, const char *name, long long lo,
                              long long hi);
double log_reader_attr_real(log_reader_t *r, hid_t obj, const char *obj_path, const char *name, double lo, double hi);
/* A 1-D dataset of variable-length strings, escaped (free with log_strings_free); *n its count. */
char **log_reader_strings(log_reader_t *r, const char *h5path, size_t *n);
void log_strings_free(char **text, size_t n);
/* A scalar fixed-length string dataset loc/name of at most max bytes; "" when there is none. */
char *log_reader_text(log_reader_t *r, hid_t loc, const char *name, const char *h5path, size_t max);
/* The log is damaged: "PATH: damaged Surge log: H5PATH WHAT", exit 2. */
_Noreturn void log_reader_damaged(const log_reader_t *r, const char *what, const char *h5path);
/* Keep at most rows rows of t (the others do not belong to a row of its step scale). */
void log_table_limit_rows(log_table_t *t, size_t rows);
void log_table_free(log_table_t *t);

#endif
