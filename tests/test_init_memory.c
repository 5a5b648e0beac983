/* model_init_params on a host backend writes the parameter slab in place: the process's peak
 * resident memory does not grow (the slab, zeroed by the backend's alloc, is resident already),
 * where a host staging copy uploaded into it would add a whole slab (doc/results.md, "Memory at
 * scale": that copy was the largest thing a sharded optimizer's ranks ever held). An mlp of 80 MB
 * of parameters on the ref and cpu backends, each in a process of its own (getrusage's peak only
 * grows). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/rss.h"
#include "nn/model.h"
#include "nn/zoo.h"
#include "tap.h"

/* In this process: the peak's growth over model_init_params, in units of the parameter slab. */
static double growth_in_slabs(const backend_t *be) {
  zoo_opts_t o;
  memset(&o, 0, sizeof o);
  snprintf(o.model, sizeof o.model, "mlp");
  o.mlp.hidden[0] = 4096; /* 784 x 4096 + 4096 x 4096 + 4096 x 10: 20M floats, 80 MB */
  o.mlp.hidden[1] = 4096;
  o.mlp.nhidden = 2;
  graph_t g;
  char err[256];
  if (zoo_build(o, shape3(1, 28, 28), 10, &g, err, sizeof err) != 0) return -1;
  model_t m;
  model_init(&m, &g, be, 1);
  double before = rss_peak_bytes();
  model_init_params(&m, 7);
  double grew = rss_peak_bytes() - before, slab = (double)g.params.total * sizeof(float);
  model_free(&m);
  graph_free(&g);
  return grew / slab;
}

int main(void) {
  const backend_t *bes[] = {&backend_ref, &backend_cpu};
  for (int k = 0; k < 2; k++) {
    int fd[2];
    if (pipe(fd) != 0) return 1;
    pid_t child = fork();
    if (child == 0) { /* a fresh process: its peak is what this initialisation makes it */
      double x = growth_in_slabs(bes[k]);
      ssize_t w = write(fd[1], &x, sizeof x);
      _exit(w == (ssize_t)sizeof x ? 0 : 1);
    }
    double x = -1;
    ssize_t got = read(fd[0], &x, sizeof x);
    waitpid(child, NULL, 0);
    close(fd[0]);
    close(fd[1]);
    tap_ok(got == (ssize_t)sizeof x && x >= 0 && x < 0.25,
           "%s: model_init_params grows the peak resident memory by %.2f parameter slabs (in place: about 0; "
           "a staging copy: about 1)", bes[k]->name, x);
  }
  return tap_done();
}
