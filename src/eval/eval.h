/* Evaluating a trained gpt (surge-eval, doc/eval.md): a scorer that runs the model forward on rows
 * of token ids and sums the log-probabilities of chosen targets; the language-model loss of a token
 * stream over non-overlapping windows; multiple-choice scoring of a JSONL file as llm.c scores
 * HellaSwag (the sum of each completion's token log-probabilities given the context). Every
 * collective splits its work (windows, examples) over the ranks of world and sums the results, so
 * any rank count gives the same totals up to the order of the last additions. */
#ifndef SURGE_EVAL_H
#define SURGE_EVAL_H

#include <stdint.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "io/gpt2_map.h"
#include "nn/model.h"
#include "tok/bpe.h"

typedef struct scorer {
  gpt2_dims_t d;
  int T, B;       /* tokens per row (the graph's input), rows per forward pass */
  graph_t g;
  model_t m;
  float *x, *y;   /* (B, T) host staging of ids and (unused) targets */
  const float *logits; /* (B, T, Vp) the output on the host: the model's own buffer on a host backend,
                        * else copy */
  float *copy;    /* (B, T, Vp) a device backend's host copy of the output, else NULL */
} scorer_t;

/* The model at path (any weights format, io/weights.h) on backend be, rows of T tokens (0: its
 * context), B rows per pass. */
void scorer_open(scorer_t *s, const char *path, const backend_t *be, int T, int B);
void scorer_close(scorer_t *s);
/* n rows (at most B) of ids x (n, T): the output logits in s->logits, (n, T, Vp). */
void scorer_forward(scorer_t *s, const int32_t *x, int n);
/* n rows (any number) of ids x and targets y (n, T), y < 0 where no target counts: sum[r] = the sum
 * over t of log p(y[r,t] | x[r, 0..t]) (softmax over the V real classes), count[r] the targets. */
void scorer_rows(scorer_t *s, const int32_t *x, const int32_t *y, int n, double *sum, long *count);

/* Loss of a token stream ids[0..n): windows of T+1 tokens, each sharing one token with the next, the
 * last one partial; window w goes to rank w % size. Totals over world: the summed loss (nats), the
 * targets, and the bytes they stand for (bytes[] per id, NULL: one byte each). */
typedef struct eval_lm {
  double nats;
  long targets;
  double bytes;
} eval_lm_t;
eval_lm_t eval_stream(scorer_t *s, const uint32_t *ids, size_t n, const uint32_t *bytes_per_id, comm_t *world);

/* Multiple choice from path (JSONL, doc/eval.md), text encoded by tok (NULL: bytes, for a model of
 * vocabulary 256 or more). Example i goes to rank i % size. Totals over world. */
typedef struct eval_choice {
  long examples;
  long correct;      /* the highest sum of log-probabilities is the label's */
  long correct_norm; /* the highest mean log-probability per completion token is the label's */
  double label_nats; /* the sum over examples of the label's completion log-probability */
} eval_choice_t;
eval_choice_t eval_choices(scorer_t *s, const char *path, const bpe_t *tok, comm_t *world);

#endif
