#include "train/claim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/deck.h"
#include "io/log_read.h"
#include "io/options.h"
#include "io/outputs.h"
#include "io/run_dir.h"
#include "mux/options.h"

/* The directory of a key's value, created and writable, or exit 2 naming the key. */
static void prepare(const char *key, const char *dir) {
  char why[4400];
  if (run_dir_prepare(dir, why, sizeof why) != 0)
    surge_input_error("%s: %s (hint: a run writes only where its deck says: make it writable or set %s)", key, why,
                      key);
}

/* Lock dir for the run, or exit 2 naming the run that holds it. */
static int lock_dir(const char *key, const char *dir) {
  char why[4600];
  int fd = run_dir_lock(dir, why, sizeof why);
  if (fd == -1)
    surge_input_error("%s = %s is in use by another run: %s (hint: wait for that run to end, or give this one "
                      "another %s)", key, dir, why, key);
  if (fd == -2)
    surge_warning("%s: two runs writing there at once would not be noticed (the file system has no locks)", why);
  return fd;
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void remove_file(const char *path) {
  if (unlink(path) != 0 && errno != ENOENT)
    surge_runtime_error("cannot remove %s: %s (hint: [run] overwrite replaces the files of the run before)", path,
                        strerror(errno));
}

/* A new run: nothing of another run may be replaced unless [run] overwrite says so, and then none
 * of it is left behind. */
static void claim_new(const config_t *cfg, const char *model, const ckpt_found_t *newest, train_claim_t *c) {
  const char *hint = "another [run] name or out_dir (and log.file, checkpoint.dir if the deck sets them), --resume "
                     "to continue that run, or -D run.overwrite=true";
  const char *existing = exists(model) ? model : exists(cfg->log_file) ? cfg->log_file : NULL;
  if (existing && !cfg->overwrite)
    surge_input_error("%s exists: the files of another run are never overwritten (hint: %s)", existing, hint);
  if (newest->count && !cfg->overwrite)
    surge_input_error("[checkpoint] dir = %s holds %d checkpoint%s of another run (the newest %s, step %ld%s%s): a "
                      "new run would replace and prune them (hint: %s)",
                      cfg->ckpt_dir, newest->count, newest->count == 1 ? "" : "s", newest->path, newest->step,
                      newest->run_id[0] ? ", run " : "", newest->run_id, hint);
  if (cfg->overwrite) {
    remove_file(model);
    checkpoint_remove_all(cfg->ckpt_dir);
  }
  run_dir_new_id(c->run_id);
}

/* --resume: the newest checkpoint must be this run's; without one, a finished run is not started
 * over. */
static void claim_resumed(const config_t *cfg, const char *model, const ckpt_found_t *newest, train_claim_t *c) {
  char log_id[CHECKPOINT_RUN_ID_LEN];
  log_peek_run_id(cfg->log_file, log_id, sizeof log_id);
  if (newest->count) {
    if (newest->run_id[0] && log_id[0] && strcmp(newest->run_id, log_id) != 0)
      surge_input_error("%s belongs to run %s, but the log %s is run %s's: [checkpoint] dir = %s holds another "
                        "run's checkpoints (hint: resume with the checkpoint.dir of run %s, or start this run in "
                        "another out_dir)",
                        newest->path, newest->run_id, cfg->log_file, log_id, cfg->ckpt_dir, log_id);
    snprintf(c->resume_from, sizeof c->resume_from, "%s", newest->path);
    c->continue_log = 1;
    if (newest->run_id[0]) snprintf(c->run_id, sizeof c->run_id, "%s", newest->run_id);
    else if (log_id[0]) snprintf(c->run_id, sizeof c->run_id, "%s", log_id);
    else run_dir_new_id(c->run_id);
    return;
  }
  if (exists(model) && !cfg->overwrite)
    surge_input_error("--resume: no checkpoint in %s, and %s is the model of a finished run: refusing to start it "
                      "over (hint: the checkpoint.dir that run wrote to, or -D run.overwrite=true to replace it)",
                      cfg->ckpt_dir, model);
  if (exists(model)) { // overwrite: a new run in place of the finished one
    remove_file(model);
    run_dir_new_id(c->run_id);
    return;
  }
  c->continue_log = exists(cfg->log_file); // stopped before its first checkpoint: its log goes on from step 0
  if (log_id[0]) snprintf(c->run_id, sizeof c->run_id, "%s", log_id);
  else run_dir_new_id(c->run_id);
}

/* "WHERE: [section] key" for a key's file in messages (WHERE: the deck line or -D that set it). */
static const char *named(char *buf, size_t n, const deck_t *deck, const char *key, const char *what) {
  const char *where = deck_is_default(deck, key) ? NULL : deck_where(deck, key);
  snprintf(buf, n, "%s%s%s", where ? where : "", where ? ": " : "", what);
  return buf;
}

/* The outputs against the inputs, and [model] init against what [run] overwrite removes. */
static void check_files(const config_t *cfg, const deck_t *deck, const char *model) {
  data_opts_t d = data_opts_of(cfg);
  char w[6][CFG_STR + 80];
  const io_path_t in[] = {{"DECK", deck_path(deck)},
                          {named(w[0], sizeof w[0], deck, "model.init", "[model] init"), cfg->model_init},
                          {named(w[1], sizeof w[1], deck, "data.path", "[data] path"), d.path},
                          {named(w[2], sizeof w[2], deck, "data.val_path", "[data] val_path"), d.val_path},
                          {named(w[3], sizeof w[3], deck, "multiplex.baseline", "[multiplex] baseline"),
                           multiplex_opts(cfg)->baseline}};
  const io_output_t out[] = {{named(w[4], sizeof w[4], deck, "log.file", "[log] file"), cfg->log_file, 0, 1}, /* HDF5 */
                             {named(w[5], sizeof w[5], deck, "run.out_dir", "[run] out_dir's model.h5"), model, 0, 1}};
  io_outputs_check(in, (int)(sizeof in / sizeof in[0]), out, 2);
  char init_dir[CFG_STR + 2];
  run_dir_of(cfg->model_init, init_dir, sizeof init_dir);
  const char *base = strrchr(cfg->model_init, '/');
  base = base ? base + 1 : cfg->model_init;
  if (cfg->overwrite && !cfg->resume && cfg->model_init[0] && checkpoint_is_name(base) &&
      run_dir_same(init_dir, cfg->ckpt_dir))
    surge_input_error("%s = %s: a checkpoint of [checkpoint] dir %s, which [run] overwrite removes before the run "
                      "reads it (hint: copy it elsewhere first)", in[1].what, cfg->model_init, cfg->ckpt_dir);
}

void train_claim(const config_t *cfg, const deck_t *deck, comm_t *world, train_claim_t *c) {
  memset(c, 0, sizeof *c);
  c->lock[0] = c->lock[1] = -1;
  if (world->rank == 0) {
    char log_dir[CFG_STR + 2], model[CFG_STR + 32];
    snprintf(model, sizeof model, "%s/model.h5", cfg->out_dir);
    check_files(cfg, deck, model);
    run_dir_of(cfg->log_file, log_dir, sizeof log_dir);
    prepare("[run] out_dir", cfg->out_dir);
    prepare("[checkpoint] dir", cfg->ckpt_dir);
    prepare("[log] file", log_dir);
    if (exists(cfg->log_file) && access(cfg->log_file, W_OK) != 0)
      surge_input_error("[log] file = %s is not writable: %s", cfg->log_file, strerror(errno));
    c->lock[0] = lock_dir("[run] out_dir", cfg->out_dir);
    if (!run_dir_same(cfg->out_dir, cfg->ckpt_dir)) c->lock[1] = lock_dir("[checkpoint] dir", cfg->ckpt_dir);
    ckpt_found_t newest;
    checkpoint_newest(cfg->ckpt_dir, &newest);
    if (cfg->resume) claim_resumed(cfg, model, &newest, c);
    else claim_new(cfg, model, &newest, c);
  }
  comm_bcast(world, c->resume_from, sizeof c->resume_from, 0, TRAFFIC_OTHER);
  comm_bcast(world, &c->continue_log, sizeof c->continue_log, 0, TRAFFIC_OTHER);
  comm_bcast(world, c->run_id, sizeof c->run_id, 0, TRAFFIC_OTHER);
}

void train_claim_release(train_claim_t *c) {
  for (int i = 0; i < 2; i++) {
    run_dir_unlock(c->lock[i]);
    c->lock[i] = -1;
  }
}
