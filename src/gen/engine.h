/* Next-token logits for a batch of B sequences that advance together, one position per step: step
 * feeds token tok[b] of every sequence b at position pos (0, 1, 2, ... in order) and returns the
 * logits that follow it. Two engines compute the same function:
 *   cache  a key/value cache: each step runs every layer on one position per sequence, attention
 *          reading the keys and values of the earlier positions from the cache (cost ~ one position);
 *   full   no cache: each step runs the whole model on positions 0..pos of every sequence, as a
 *          forward pass in training does, and keeps the last position's logits (cost ~ pos + 1
 *          positions). It is the reference the cache is checked against (tests/test_gen.c). */
#ifndef SURGE_GEN_ENGINE_H
#define SURGE_GEN_ENGINE_H

#include "backend/backend.h"
#include "gen/model.h"

typedef struct gen_engine gen_engine_t;
struct gen_engine {
  const char *name; /* "cache" or "full" */
  int B;            /* sequences */
  int V;            /* logits per sequence: the output's columns, padding included */
  int weights16;    /* its products read a bfloat16 copy of the weights (gen_engine_cache) */
  int kv16;         /* its key/value cache is held in bfloat16 (gen_engine_cache, where the context says kv16) */
  size_t cache_bytes; /* the key/value cache's size, every layer's keys and values (0: the full engine) */
  /* tok (B) token ids stored as float (host); logits (B, V) host, written */
  void (*step)(gen_engine_t *e, const float *tok, int pos, float *logits);
  void (*free)(gen_engine_t *e);
};

/* gen_engine_cache's halves, each taken where the backend's context allows it and said in gen_engine_t:
 *   GEN_WEIGHTS16  a bfloat16 copy of the parameters where the backend's products of B rows read one
 *                  (model_weights16: cpu in bf16, B up to the context's weights16_rows; half the parameters'
 *                  memory again, and one pass over them to make it)
 *   GEN_KV16       the key/value cache held in bfloat16 where the context says kv16 (cpu and ref in bf16:
 *                  the same results, half the cache) */
enum { GEN_WEIGHTS16 = 1, GEN_KV16 = 2 };
/* Engines over model m (which must outlive them) on backend be (opened), B >= 1 sequences; the
 * parameters are uploaded once when the engine opens. The cache engine holds `positions` of each sequence
 * (1 to the context: the most its steps reach, prompt and new tokens), half: GEN_* flags. */
gen_engine_t *gen_engine_cache(const gen_model_t *m, const backend_t *be, int B, int positions, int half);
gen_engine_t *gen_engine_full(const gen_model_t *m, const backend_t *be, int B);
/* By name ("cache" or "full"; the cache with both halves); NULL for another name. */
gen_engine_t *gen_engine_open(const char *name, const gen_model_t *m, const backend_t *be, int B, int positions);

#endif
