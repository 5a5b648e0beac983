#include "io/config_schema.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/deck.h"

#define CFG_OPTS config_t

// clang-format off: the table reads best one key per row

/* The trainer's own keys (fields of config_t). */
static const cfg_key_t core_rows[] = {
    CFG_NAME_KEY("run", "name", run_name, "run", "name of the run (used in file names)"),
    CFG_INT_KEY("run", "steps", steps, "100", 1, CFG_MAX_COUNT, "optimizer steps to run"),
    CFG_INT_KEY("run", "seed", seed, "1", 0, INT64_MAX, "seed of every random stream (weights, data order)"),
    CFG_INT_KEY("run", "eval_every", eval_every, "0", 0, CFG_MAX_COUNT,
                "evaluate every N steps (0: only at the end)"),
    CFG_INT_KEY("run", "print_every", print_every, "10", 1, CFG_MAX_COUNT, "print a progress line every N steps"),
    CFG_INT_KEY("run", "sample_every", sample_every, "0", 0, CFG_MAX_COUNT,
                "gpt: after each evaluation at a multiple of N steps and after the last one, rank 0 prints a "
                "sample of the model and stores it in the log's /samples (0: never; a multiple of eval_every)"),
    CFG_INT_KEY("run", "sample_tokens", sample_tokens, "64", 1, CFG_MAX_COUNT,
                "new tokens of each sample (below gpt_context: it starts from one token)"),
    CFG_STRING_KEY("run", "out_dir", out_dir, "runs/${run.name}", 1, "directory the run writes its files to"),
    CFG_BOOL_KEY("run", "overwrite", overwrite, "false", "replace the files of a finished run in out_dir"),
    CFG_FLOAT_KEY("run", "stall_timeout_s", stall_timeout_s, "0", 0, CFG_CLOSED, 1e7, CFG_CLOSED,
                  "end the job when a rank makes no progress for this many seconds: a step, an evaluation (with its "
                  "sample), a checkpoint write or the model file that takes longer (a rank or a link that died "
                  "leaves the others waiting in MPI for ever; exit 1, earlier checkpoints intact; not in a "
                  "background job, which waits at its gate; 0: never)"),

    CFG_ENUM_KEY("model", "zoo", zoo, NULL, CFG_VALUES("mlp", "vgg-mini", "resnet-mini", "gpt", "vgg16", "resnet18", "resnet50",
                                                         "wrn50", "wrn101", "inception-v3"),
                 "model architecture from the zoo"),
    CFG_STRING_KEY("model", "init", model_init, "", 0,
                   "start from these parameters: model.h5, a checkpoint (its parameters only), safetensors (Hugging "
                   "Face GPT-2) or llm.c's model file; shapes checked against the deck; fresh optimizer state "
                   "(empty: from the seed)"),

    CFG_INT_KEY("train", "global_batch", global_batch, "128", 1, 10000000,
                "samples per optimizer step, over all ranks"),
    {CFG_ROW("train", "micro_batches", CFG_INT, "1", micro_batches,
             "micro-batches per step (gradient accumulation): the global batch runs in this many parts, their "
             "gradients summed before the one update, activation buffers sized to one part; dp, burst: at most "
             "global_batch, no batch norm; 3d: each replica's share splits into this many (doc/burst.md, "
             "doc/3d.md); formerly [parallel] micro_batches, still read"),
     .imin = 1, .imax = 65536, .was = "parallel.micro_batches"},

    CFG_STRING_KEY("log", "file", log_file, "${run.out_dir}/log.h5", 1, "HDF5 metrics log of the run"),
    CFG_INT_KEY("log", "flush_every", log_flush_every, "10", 1, CFG_MAX_COUNT,
                "flush the log every N steps (what a kill can lose)"),

    CFG_INT_KEY("checkpoint", "every", ckpt_every, "0", 0, CFG_MAX_COUNT,
                "write a checkpoint every N steps (0: only at the end and on SIGTERM/SIGUSR1)"),
    CFG_STRING_KEY("checkpoint", "dir", ckpt_dir, "${run.out_dir}/checkpoints", 1, "directory of the checkpoints"),
    CFG_INT_KEY("checkpoint", "keep", ckpt_keep, "3", 1, 1000000, "newest checkpoints kept (older ones are removed)"),
    CFG_ENUM_KEY("checkpoint", "compression", ckpt_compression, "bitshuffle-lz4",
                 CFG_VALUES("bitshuffle-lz4", "shuffle-deflate", "none"),
                 "HDF5 filter of checkpoint datasets (bitshuffle-lz4 needs the Debian package bitshuffle)"),
    CFG_BOOL_KEY("checkpoint", "resume", resume, "false",
                 "start from the newest checkpoint in dir (also: surge-train --resume)"),

};
// clang-format on
const cfg_part_t cfg_core_options = {.name = "core", .keys = core_rows, .nkeys = CFG_NROWS(core_rows)};

/* ---- the merged schema ---- */

const cfg_section_t *cfg_sections = cfg_deck_sections;
int cfg_nsections;
const cfg_key_t *cfg_keys;
int cfg_nkeys;

typedef struct part_slot {
  const cfg_part_t *part;
  size_t base; /* its struct's offset in config_t */
} part_slot_t;

enum { MAX_PARTS = 32 };
static part_slot_t slots[MAX_PARTS];
static int nslots;

/* Every part with its base: the core part's rows are config_t's fields (base 0); the others get
 * consecutive slots of the part area, 16-byte aligned. */
static void place_parts(void) {
  if (cfg_deck_nparts + 1 > MAX_PARTS) surge_runtime_error("the deck schema merges %d parts, at most %d", cfg_deck_nparts + 1, MAX_PARTS);
  slots[nslots++] = (part_slot_t){&cfg_core_options, 0};
  size_t used = 0;
  for (int p = 0; p < cfg_deck_nparts; p++) {
    const cfg_part_t *part = cfg_deck_parts[p];
    size_t base = 0;
    if (part->size) {
      base = offsetof(config_t, parts) + used;
      used += (part->size + 15) / 16 * 16;
      if (used > CFG_PARTS_BYTES)
        surge_runtime_error("the deck's parts need more than the %d bytes of config_t's part area (at part %s: "
                            "raise CFG_PARTS_BYTES)", CFG_PARTS_BYTES, part->name);
    }
    slots[nslots++] = (part_slot_t){part, base};
  }
}

/* The rows of every part, section by section, with their offsets made config_t's. */
__attribute__((constructor)) static void merge_schema(void) {
  place_parts();
  cfg_nsections = cfg_deck_nsections;
  int total = 0;
  for (int p = 0; p < nslots; p++) total += slots[p].part->nkeys;
  cfg_key_t *rows = xmalloc(sizeof *rows * (size_t)total);
  int n = 0;
  for (int s = 0; s < cfg_nsections; s++)
    for (int p = 0; p < nslots; p++)
      for (int i = 0; i < slots[p].part->nkeys; i++) {
        const cfg_key_t *k = &slots[p].part->keys[i];
        if (strcmp(k->section, cfg_deck_sections[s].name) != 0) continue;
        rows[n] = *k;
        rows[n].offset += slots[p].base;
        if (k->type == CFG_INT_LIST) rows[n].count_offset += slots[p].base;
        n++;
      }
  if (n != total) surge_runtime_error("the deck schema: %d of its %d keys are in no section of the deck", total - n, total);
  cfg_keys = rows;
  cfg_nkeys = n;
}

static size_t base_of(const cfg_part_t *part) {
  for (int p = 0; p < nslots; p++)
    if (slots[p].part == part) return slots[p].base;
  surge_runtime_error("part %s: not among the deck's parts (src/layout/deck_parts.c)", part->name);
}

const void *cfg_part(const struct config *cfg, const cfg_part_t *part) { return (const char *)cfg + base_of(part); }

void *cfg_part_rw(struct config *cfg, const cfg_part_t *part) { return (char *)cfg + base_of(part); }

void cfg_check_parts(const struct deck *d, const config_t *cfg) {
  for (int p = 0; p < nslots; p++) {
    cfg_problem_t problem = {0};
    if (slots[p].part->check && slots[p].part->check(cfg, &problem))
      deck_key_error(d, problem.or_key[0] ? deck_blamed_key(d, problem.key, problem.or_key) : problem.key, "%s",
                     problem.msg);
  }
}

int cfg_find_section(const char *section) {
  for (int i = 0; i < cfg_nsections; i++)
    if (strcmp(cfg_sections[i].name, section) == 0) return i;
  return -1;
}

int cfg_find_key(const char *section, const char *key) {
  for (int i = 0; i < cfg_nkeys; i++)
    if (strcmp(cfg_keys[i].section, section) == 0 && strcmp(cfg_keys[i].key, key) == 0) return i;
  return -1;
}

int cfg_find_key_or_former(const char *section, const char *key) {
  int i = cfg_find_key(section, key);
  size_t n = strlen(section);
  for (int j = 0; i < 0 && j < cfg_nkeys; j++) {
    const char *was = cfg_keys[j].was;
    if (was && strncmp(was, section, n) == 0 && was[n] == '.' && strcmp(was + n + 1, key) == 0) i = j;
  }
  return i;
}

#define SUGGEST_MAX_LEN 64

/* Edit distance between two short strings: insertions, deletions, substitutions and swaps of
 * neighbours ("gtp" is one edit from "gpt"), each costing 1 (optimal string alignment). */
static int edit_distance(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  int d[SUGGEST_MAX_LEN + 1][SUGGEST_MAX_LEN + 1]; // d[i][j]: a[0,i) vs b[0,j)
  for (size_t i = 0; i <= na; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= nb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= na; i++)
    for (size_t j = 1; j <= nb; j++) {
      int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[na][nb];
}

static int is_prefix(const char *p, const char *s) { return *p && strncmp(p, s, strlen(p)) == 0; }

const char *cfg_closest(const char *word, const char *const *cands, int n) {
  size_t len = strlen(word);
  if (len == 0 || len > SUGGEST_MAX_LEN) return NULL;
  const char *best = NULL;
  int best_d = 3;
  for (int i = 0; n < 0 ? cands[i] != NULL : i < n; i++) {
    if (strlen(cands[i]) > SUGGEST_MAX_LEN) continue;
    int d = edit_distance(word, cands[i]);
    if (d < best_d && d < (int)len) best = cands[i], best_d = d;
  }
  if (best) return best;
  for (int i = 0; n < 0 ? cands[i] != NULL : i < n; i++)
    if (is_prefix(word, cands[i]) || is_prefix(cands[i], word)) return cands[i];
  return NULL;
}

const char *cfg_closest_key(const char *name, char *buf, size_t size) {
  enum { FULL = 80 };
  char(*full)[FULL] = xmalloc(FULL * (size_t)cfg_nkeys); /* "section.key" per schema key */
  const char **names = xmalloc(sizeof(char *) * (size_t)cfg_nkeys);
  for (int i = 0; i < cfg_nkeys; i++) {
    snprintf(full[i], FULL, "%s.%s", cfg_keys[i].section, cfg_keys[i].key);
    names[i] = full[i];
  }
  const char *close = cfg_closest(name, names, cfg_nkeys);
  if (close) snprintf(buf, size, "%s", close);
  free(names);
  free(full);
  return close ? buf : NULL;
}
