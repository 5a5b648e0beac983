#include "core/rss.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

double rss_now_bytes(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  fclose(f);
  return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

double rss_peak_bytes(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (double)ru.ru_maxrss * 1024.0; /* Linux reports KiB */
}
