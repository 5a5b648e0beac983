/* surge-report LOG.h5 [LOG.h5 ...] [options]: summaries, sweep tables, CSV/JSON and SVG figures from
 * Surge HDF5 logs. The work lives in src/report/ (the parts' views in their owners' folders). */
#include "layout/log_parts.h"
#include "report/report.h"

int main(int argc, char **argv) {
  layout_log_parts_register(); /* the parts a log may have beyond the core, and their views */
  return report_main(argc, argv);
}
