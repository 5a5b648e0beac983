/* surge-report LOG.h5 [LOG.h5 ...] [options]: summaries, sweep tables, CSV/JSON and SVG figures from
 * Surge HDF5 logs. The work lives in src/report/. */
#include "report/report.h"

int main(int argc, char **argv) { return report_main(argc, argv); }
