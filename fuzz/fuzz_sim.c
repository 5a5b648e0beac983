/* surge-report on surge-sim result files (sim/sim_report.c through sim/sim_read.c): any file is
 * refused with an input error or summarised, and its figures drawn (into a private directory). */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "report/report.h"

static FILE *sink;
static char figures[512];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init();
  sink = fopen("/dev/null", "w");
  snprintf(figures, sizeof figures, "%s/figures", fuzz_dir());
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file(data, size, "sim.h5");
  if (FUZZ_TRY() && report_sim_is(path)) report_sim(path, figures, sink);
  fuzz_h5_close_all();
  fuzz_fds_close();
  return 0;
}
