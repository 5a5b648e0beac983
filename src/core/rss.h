/* This process's resident memory, for reports and benchmarks (Linux: /proc and getrusage). */
#ifndef SURGE_RSS_H
#define SURGE_RSS_H

/* Resident bytes now; 0 where unknown. */
double rss_now_bytes(void);
/* The most resident bytes the process has had so far; 0 where unknown. */
double rss_peak_bytes(void);

#endif
