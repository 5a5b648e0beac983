/* The log reader (io/log_read.c) and what surge-report makes of what it accepts: any file is refused
 * with an input error or read, and then summarised and exported as CSV and JSON (to /dev/null). */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "io/log_read.h"
#include "layout/log_parts.h"
#include "report/report.h"

static FILE *sink;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init();
  layout_log_parts_register();
  sink = fopen("/dev/null", "w");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file(data, size, "log.h5");
  log_data_t *volatile log = NULL;
  if (FUZZ_TRY()) {
    log = log_read(path);
    report_summary_print(sink, log);
    report_export_run_csv("/dev/null", log);
    report_export_run_json("/dev/null", log);
    const log_data_t *one[1] = {log};
    report_table_t *t = report_table_build(one, 1);
    report_table_print(sink, t);
    report_table_free(t);
  }
  fuzz_h5_close_all();
  if (log) log_data_free(log);
  return 0;
}
