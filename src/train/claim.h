/* A run's claim on its outputs, made at its start before anything is trained (doc/security.md).
 * The directories it writes ([run] out_dir, the log's directory, [checkpoint] dir) are created and
 * checked writable (exit 2 when one is not, whether it existed or not); out_dir and the checkpoint
 * directory are locked for the run's life (exit 2 naming the run that holds one). Then what is
 * already there decides how the run begins:
 *   a new run:  a finished run's model.h5, a log, or checkpoints are refused unless [run] overwrite,
 *               which removes the model file and every checkpoint first (the log is replaced), so
 *               no checkpoint of the old run is resumed later;
 *   --resume:   the newest checkpoint (by the step it holds) must be this run's: when the log in
 *               place names a run, the checkpoint must name the same. Without a checkpoint, a
 *               finished run's model.h5 is refused unless [run] overwrite (which starts anew), and
 *               the log of a run stopped before its first checkpoint is continued from step 0.
 * Each run has an identity (a random 64-bit number in hex) kept in its log, checkpoints and model
 * file; a resumed run keeps its own. Before all that, its outputs (the log, out_dir's model.h5) are
 * checked against its inputs (the deck, [model] init, the data, [multiplex] baseline: io/outputs.h),
 * and [model] init may not be a file that [run] overwrite removes. */
#ifndef SURGE_CLAIM_H
#define SURGE_CLAIM_H

#include "comm/comm.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "io/deck.h"

typedef struct train_claim {
  char resume_from[4096]; /* the checkpoint to load; "" to start at step 0 */
  int continue_log;       /* reopen the log in place (a resumed run) rather than create it */
  char run_id[CHECKPOINT_RUN_ID_LEN];
  int lock[2];            /* rank 0: the directory locks held (-1: none) */
} train_claim_t;

/* Collective over world: rank 0 checks, locks and decides (its errors end the job with exit 2);
 * every rank receives the outcome. */
void train_claim(const config_t *cfg, const deck_t *deck, comm_t *world, train_claim_t *c);
/* Drop the locks (at the end of the run; the process's end drops them too). */
void train_claim_release(train_claim_t *c);

#endif
