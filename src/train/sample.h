/* [run] sample_every (doc/generate.md): after an evaluation, a sample of the model as it is then.
 * Rank 0 gathers the parameters, generates [run] sample_tokens tokens with the key/value cache
 * (gen/engine.h) on the run's backend from one start token (the tokenizer's <|endoftext|>, else a
 * newline byte for byte-level text, else id 0), sampling at temperature 1 with the run's seed
 * and the same draws every time (samples differ by the model alone; surge-sample's first sample of
 * the start token with that seed), prints it and stores it in the log's /samples, both written as
 * gen_vocab_printable does. */
#ifndef SURGE_TRAIN_SAMPLE_H
#define SURGE_TRAIN_SAMPLE_H

#include "io/log.h"
#include "train/progress.h"
#include "train/train.h"

/* Whether an evaluation after `step` is followed by a sample (last: the run's final evaluation). */
int trainer_samples_after(const trainer_t *t, long step, int last);
/* Collective, at the start: the log's /samples for a run that samples (NULL for one that does not;
 * a resumed log that began without /samples stays so). */
log_rows_t *trainer_sample_log(const trainer_t *t, run_log_t *log);
/* Collective: the sample after t's current step, its row in samples (may be NULL). */
void trainer_sample(trainer_t *t, log_rows_t *samples, progress_t *p);

#endif
