/* The table of the log's parts (io/log_part.h) and their views (report/report.h): a layout or
 * feature with records of its own in the log is one more pair of entries here. */
#include "layout/log_parts.h"

#include "burst/plan_log.h"
#include "mux/mux_log.h"
#include "pipe/pipe_log.h"
#include "report/report.h"

void layout_log_parts_register(void) {
  static const log_part_t *const parts[] = {&burst_plan_log_part, &mux_log_part, &pipe_log_part,
                                            &pipe_compress_log_part};
  static const report_view_t *const views[] = {&mux_report_view, &burst_plan_report_view, &pipe_report_view,
                                               &pipe_compress_report_view};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) log_part_register(parts[i]);
  for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) report_view_register(views[i]);
}
