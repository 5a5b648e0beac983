/* The small gpt the 3d equivalence tests train (tests/test_pipe_equiv.c, tests/test_compress_equiv.c):
 * 4 blocks of width 32 with 4 heads, context 16, on the fortunes text, 10 steps of global batch 16
 * from seed 5. Each test appends its optimizer (and layout) as deck text. */
#ifndef SURGE_TESTS_SMALL_GPT_H
#define SURGE_TESTS_SMALL_GPT_H

#define SMALL_GPT_DECK                                                                                       \
  "[run]\n"                                                                                                  \
  "seed = 5\n"                                                                                               \
  "steps = 10\n"                                                                                             \
  "[model]\n"                                                                                                \
  "zoo = gpt\n"                                                                                              \
  "gpt_layers = 4\n"                                                                                         \
  "gpt_width = 32\n"                                                                                         \
  "gpt_heads = 4\n"                                                                                          \
  "gpt_context = 16\n"                                                                                       \
  "[data]\n"                                                                                                 \
  "source = text\n"                                                                                          \
  "[train]\n"                                                                                                \
  "global_batch = 16\n"

#endif
