/* Pipeline stages of whole blocks: L consecutive blocks split into PP stages, balanced by cost
 * (training FLOPs per sample), where the first stage also carries the embedding (head) and the last
 * the final norm, output layer and loss (tail). */
#ifndef SURGE_PIPE_PARTITION_H
#define SURGE_PIPE_PARTITION_H

/* count[0..PP) blocks per stage, each at least 1 (1 <= PP <= L), minimising the largest stage cost
 * cost(s) = sum of its blocks' cost[] + (s == 0 ? head : 0) + (s == PP-1 ? tail : 0); among equal
 * maxima the earliest stages take the most blocks. */
void pipe_partition(const double *cost, int L, double head, double tail, int PP, int *count);

#endif
