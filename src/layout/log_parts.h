/* Every part of a metrics log beyond what each run has (io/log_part.h: a burst plan, a pipeline and
 * its compressor, multiplexing), for the programs that read logs. */
#ifndef SURGE_LAYOUT_LOG_PARTS_H
#define SURGE_LAYOUT_LOG_PARTS_H

/* Register every part with the log's reader (io/log_part.h) and their sections with surge-report's
 * (report/report.h). Call before reading a log. */
void layout_log_parts_register(void);

#endif
