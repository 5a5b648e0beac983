#include "burst/plan_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/infile.h"

enum { PLAN_TEXT_MAX = 64 << 20 }; /* bytes: far beyond any graph's plan */

char *plan_text_read(const char *path) {
  FILE *f = infile_fopen(path, NULL);
  if (!f) surge_input_error("cannot open plan file %s: %s", path, strerror(errno));
  size_t len = 0, cap = 4096;
  char *text = xmalloc(cap);
  size_t got;
  while ((got = fread(text + len, 1, cap - 1 - len, f)) > 0) {
    len += got;
    if (len > PLAN_TEXT_MAX) surge_input_error("plan file %s is over %d bytes", path, PLAN_TEXT_MAX);
    if (len == cap - 1) text = xrealloc(text, cap *= 2);
  }
  int failed = ferror(f);
  fclose(f);
  if (failed) surge_input_error("cannot read plan file %s: %s", path, strerror(errno));
  text[len] = '\0';
  return text;
}

char *plan_text_of(const graph_t *g, const char *model, const burst_plan_t *plan) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) surge_runtime_error("cannot open a memory stream for the plan text: %s", strerror(errno));
  burst_plan_fwrite(f, "(planned at start-up)", g, model, plan);
  if (fclose(f) != 0) surge_runtime_error("cannot write the plan text: %s", strerror(errno));
  return text;
}
