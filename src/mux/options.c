/* The deck's [multiplex] section: foreground/background co-scheduling (doc/multiplexing.md). */
#include "mux/options.h"

#define CFG_OPTS multiplex_opts_t
// clang-format off: the table reads best one key per row
static const cfg_key_t rows[] = {
    CFG_STRING_KEY("multiplex", "channel", channel, "", 0,
                   "name both partners use (1..64 of A-Z a-z 0-9 . _ -); empty: chosen automatically in one "
                   "MPMD mpiexec, slurm-JOBID inside a Slurm job; separate jobs elsewhere must set it"),
    CFG_ENUM_KEY("multiplex", "placement", placement, "process", CFG_VALUES("process", "thread"),
                 "foreground: where its background runs; process: a job of its own (surge-train --background, "
                 "paired through the channel); thread: inside each foreground rank's process, in a second thread "
                 "at the lowest priority, the deck given by surge-train --background-deck (its job's ranks: "
                 "background_ranks; on cuda the device's lowest-priority stream)"),
    CFG_INT_KEY("multiplex", "background_ranks", background_ranks, "1", 0, 1 << 20,
                "foreground, placement = thread: ranks of each in-process background job; 1: a 1-rank background "
                "per foreground rank; N (a divisor of the foreground's ranks): one N-rank job over each N "
                "consecutive foreground ranks' threads; 0: one job over all of them"),
    CFG_ENUM_KEY("multiplex", "on_foreground_end", on_fg_end, "stop", CFG_VALUES("stop", "continue"),
                 "background: when its foreground ends, stop after the step with a checkpoint, or continue at "
                 "full speed"),
    CFG_FLOAT_KEY("multiplex", "min_wait_us", min_wait_us, "500", 0, CFG_CLOSED, 1e9, CFG_CLOSED,
                  "background: run while the foreground waits on a receive expected to last at least this many "
                  "microseconds (always while it is inactive, never during its allreduce)"),
    CFG_FLOAT_KEY("multiplex", "piece_ms", piece_ms, "0.5", 0, CFG_CLOSED, 1000, CFG_CLOSED,
                  "background: group its passes (each node's forward or backward, the data fetch, the update) "
                  "into pieces of about this many milliseconds, from their CPU times in its earlier steps (on a "
                  "GPU backend: each pass's device time in its first step), and pass the gate only before each "
                  "piece (0: before every pass)"),
    CFG_ENUM_KEY("multiplex", "graphs", graphs, "off", CFG_VALUES("off", "on"),
                 "background on a GPU backend (1 rank): on: from its second step, record each piece as a CUDA "
                 "graph (updated in place every step) and launch it whole after its gate; a piece that waits for "
                 "the device (a copy with the host) runs as it comes; off: launch its kernels one by one (not yet "
                 "run on a GPU: doc/gpu.md)"),
    CFG_FLOAT_KEY("multiplex", "poll_us", poll_us, "1000", 0, CFG_CLOSED, 1e6, CFG_CLOSED,
                  "foreground: a wait polls without sleeping for its first 100 microseconds (or poll_us if "
                  "shorter), then sleeps between polls for poll_fraction of the time waited so far, at most poll_us, "
                  "leaving the core to the background, where the background's gate opens for it (inactive, or a "
                  "long wait) or the background is inside a piece (the others poll without sleeping); 0: wait "
                  "spinning inside MPI; also a multi-rank in-process background's waits for its other ranks"),
    CFG_FLOAT_KEY("multiplex", "poll_fraction", poll_fraction, "0.0625", 0, CFG_OPEN, 1, CFG_CLOSED,
                  "foreground: a polite wait sleeps this fraction of the time it has waited between two polls: "
                  "smaller notices a wait's end sooner (the foreground first), larger wakes less often (more of the "
                  "core for the background)"),
    CFG_FLOAT_KEY("multiplex", "partner_wait_s", partner_wait_s, "120", 0, CFG_OPEN, 1e6, CFG_CLOSED,
                  "background: give up (exit 1) when no foreground attached within this many seconds"),
    CFG_ENUM_KEY("multiplex", "priority", priority, "idle", CFG_VALUES("idle", "nice", "none"),
                 "background: CPU priority; idle: SCHED_IDLE (nice 19 where refused, and for the threads of a "
                 "multi-rank in-process background), nice: nice 19, none: as started; idle and nice also set a background "
                 "process's session (Linux autogroup) to nice 19 while its foreground is in another session"),
    CFG_INT_KEY("multiplex", "partner_offset", partner_offset, "0", 0, 4095,
                "pair local rank i of this job on a node with rank i + offset of the partner job there (e.g. one "
                "1-rank background job per foreground rank: offsets 0, 1, ...)"),
    CFG_STRING_KEY("multiplex", "baseline", baseline, "", 0,
                   "foreground: the HDF5 log of a foreground-only run of the same deck; the slowdown is its median "
                   "samples/s over this run's (empty: measured within the run when some steps had no background)"),
    CFG_BOOL_KEY("multiplex", "follow_affinity", follow_affinity, "true",
                 "background: run on the CPU set of its foreground partner"),
    CFG_FLOAT_KEY("multiplex", "slowdown_limit", slowdown_limit, "1.1", 1, CFG_OPEN, 100, CFG_CLOSED,
                  "background: hold back while the foreground's recent pieces of work take more than this many "
                  "times as long as they do without a background (DeepPool's slowdown feedback)"),
    CFG_ENUM_KEY("multiplex", "slowdown_feedback", slowdown_feedback, "device",
                 CFG_VALUES("device", "always", "off"),
                 "background: where slowdown_limit applies; device: on a GPU backend, whose kernels overlap the "
                 "foreground's; always: also on CPUs (where the OS priority already keeps it off the "
                 "foreground's core); off: never. In a foreground's deck: where it times its pieces for the "
                 "feedback, on a GPU by marks on its stream at each change of state, read once the device has "
                 "passed them (no wait; off: the host's clock)"),
};
// clang-format on

const cfg_part_t multiplex_options = {
    .name = "multiplex", .keys = rows, .nkeys = CFG_NROWS(rows), .size = sizeof(multiplex_opts_t)};
