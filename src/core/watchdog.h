/* A watchdog for a rank that waits for ever: a thread that ends the process when the trainer has made
 * no progress (watchdog_beat) for the timeout. MPI over TCP notices a link that died silently only
 * after minutes, if ever, and a rank blocked in a collective for a dead peer spins there; the
 * launcher ends the job once one of its processes exits without MPI_Finalize (doc/checkpoints.md,
 * "A rank that waits for ever"). The thread calls no MPI: it writes its line and _exits. */
#ifndef SURGE_CORE_WATCHDOG_H
#define SURGE_CORE_WATCHDOG_H

/* Start watching (timeout_s <= 0: nothing); rank and host name the process in the line. */
void watchdog_start(double timeout_s, int rank, int ranks);
/* Progress: what the rank does next (a string that outlives the watch, e.g. a literal) at step;
 * from the thread that started the watch only (an in-process background's beats are not its). */
void watchdog_beat(const char *doing, long step);
/* Stop watching (joins the thread); nothing when not started, or called from another thread than
 * the one that started it (an in-process background's run ends before its foreground's). A process
 * suspended and resumed does not count its suspension as time without progress. */
void watchdog_stop(void);

#endif
