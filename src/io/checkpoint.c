/* checkpoint_write: the root attributes of a checkpoint, its state regions through ckpt_file_write,
 * then pruning of the old ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/checkpoint_impl.h"
#include "io/h5serial.h"

int checkpoint_compression_available(const char *compression, char *why, size_t why_len) {
  H5_SERIAL(); /* io/h5serial.h: HDF5's filter registry is not for two threads at once */
  h5util_quiet_t quiet = h5util_quiet_begin();
  int rc = ckpt_h5_compression_check(compression, why, why_len);
  h5util_quiet_end(quiet);
  return rc == 0;
}

/* Collective: the same UTC time on every rank, ISO 8601. */
static void created_now(comm_t *world, char out[32]) {
  memset(out, 0, 32);
  if (world->rank == 0) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
  }
  comm_bcast(world, out, 32, 0, TRAFFIC_OTHER);
}

static int put_root(hid_t file, const void *root, const char **failed) { return ckpt_root_write(file, root, failed); }

void checkpoint_write(const char *dir, const ckpt_state_t *s, const config_t *cfg, const char *deck_text,
                      comm_t *world, char *written, size_t written_len) {
  H5_SERIAL_COLLECTIVE(world); /* io/h5serial.h: one HDF5 call at a time in the process */
  char final[CKPT_PATH], temp[CKPT_PATH], created[32];
  ckpt_path(final, sizeof final, dir, s->step, 0);
  ckpt_path(temp, sizeof temp, dir, s->step, 1);
  h5util_quiet_t quiet = h5util_quiet_begin();
  char *config = ckpt_config_text(cfg);
  created_now(world, created);
  ckpt_root_t root = {
      .format = CKPT_FORMAT_NAME, .format_version = CHECKPOINT_FORMAT_VERSION, .model = (char *)cfg->zoo,
      .fingerprint = ckpt_fnv1a64(config), .config = config, .step = s->step, .opt_t = s->opt_t,
      .seed = cfg->seed, .global_batch = cfg->global_batch, .samples_seen = (int64_t)s->step * cfg->global_batch,
      .ranks = world->size, .layout = (char *)(s->layout ? s->layout : ""), .created = created,
      .compression = (char *)cfg->ckpt_compression, .deck = (char *)(deck_text ? deck_text : ""),
      .run_id = (char *)s->run_id, .vocab = (char *)s->vocab, .rank_grid = (char *)s->rank_grid,
  };
  ckpt_file_t f = {.kind = "checkpoint", .dir = dir, .final = final, .temp = temp, .put_root = put_root,
                   .root_arg = &root, .regions = s->regions, .nregions = s->nregions,
                   .compression = cfg->ckpt_compression};
  ckpt_file_write(&f, world);
  free(config);
  if (world->rank == 0) ckpt_prune(dir, s->step, cfg->ckpt_keep);
  comm_barrier(world);
  h5util_quiet_end(quiet);
  if (written) snprintf(written, written_len, "%s", final);
}
