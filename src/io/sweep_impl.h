/* Inside io/sweep: a [sweep] section as parsed (sweep.c) and read variant by variant
 * (sweep_variant.c). Values are never all expanded: an item stands for `count` values and yields
 * the j-th on demand, so memory follows the deck's size, not the number of variants. */
#ifndef SURGE_SWEEP_IMPL_H
#define SURGE_SWEEP_IMPL_H

#include "io/strbuf.h"
#include "io/sweep.h"

typedef enum {
  ITEM_VALUE,       /* one value as written */
  ITEM_INT_RANGE,   /* istart + j*istep */
  ITEM_FLOAT_RANGE, /* start + j*step, the last one `stop` itself when the range lands on it */
  ITEM_LOG_RANGE,   /* exp(log(start) + j*step), the last one `stop` itself */
} sweep_item_kind_t;

/* One comma-separated entry of a [sweep] line. */
typedef struct sweep_item {
  sweep_item_kind_t kind;
  long count;               /* values it stands for, >= 1 */
  char *raw;                /* ITEM_VALUE: as written, quotes removed, escapes kept */
  long long istart, istep;  /* ITEM_INT_RANGE */
  double start, step, stop; /* ITEM_FLOAT_RANGE, ITEM_LOG_RANGE (step of the logarithm) */
  int lands;                /* ITEM_FLOAT_RANGE: the last value is stop */
} sweep_item_t;

/* One swept key: "section.key = items". */
typedef struct sweep_line {
  int key;    /* index into cfg_keys */
  int line;   /* line in the deck */
  char *name; /* "section.key" */
  sweep_item_t *items;
  int nitems;
  long count;  /* values of all its items */
  long stride; /* product: variants between two of its values (the last line: 1) */
} sweep_line_t;

struct sweep {
  char *path;
  int zip;             /* mode = zip: variant i takes the i-th value of every line */
  sweep_line_t *lines; /* in deck order */
  int nlines;
  long count;       /* variants */
  int names_itself; /* run.name or run.out_dir is swept */
};

/* Append the j-th value (0 <= j < it->count) of an item as deck text. */
void sweep_item_value(const sweep_item_t *it, long j, strbuf_t *out);

#endif
