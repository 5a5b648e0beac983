/* The plan of a device group's v-collectives (comm/parts.h): which rank roots which part of a
 * reduce-scatter's or all-gather's NCCL group, empty parts issuing nothing, the floats each moves
 * (a sharded optimizer's buckets cut at its shard bounds: every rank roots exactly its shard), the
 * span a staged all-gather copies, and the reduce-scatter's check of its parts. Host arithmetic
 * only: the NCCL calls themselves need a GPU (tests/gpu/dp.gpu). */
#include <string.h>

#include "comm/parts.h"
#include "sync/shard.h"
#include "tap.h"

/* Whether ops (k of them) are exactly the expected (root, off, n) triples, in order. */
static int same_ops(const comm_part_t *ops, int k, const comm_part_t *want, int nwant) {
  if (k != nwant) return 0;
  for (int i = 0; i < k; i++)
    if (ops[i].root != want[i].root || ops[i].off != want[i].off || ops[i].n != want[i].n) return 0;
  return 1;
}

static void check_rooted(void) {
  comm_part_t ops[8];
  /* 4 ranks, rank 0 and rank 2 owning nothing of the bucket: two operations, rooted at 1 and 3 */
  size_t off[4] = {0, 0, 30, 30}, cnt[4] = {0, 30, 0, 70};
  int k = comm_parts_rooted(4, off, cnt, ops);
  tap_ok(same_ops(ops, k, (comm_part_t[]){{1, 0, 30}, {3, 30, 70}}, 2),
         "uneven parts: one operation per non-empty part, rooted at its owner, empty parts skipped (%d ops)", k);
  /* a bucket within one rank's shard: one operation, that rank the root of all of it */
  size_t off1[3] = {0, 0, 0}, cnt1[3] = {0, 512, 0};
  k = comm_parts_rooted(3, off1, cnt1, ops);
  tap_ok(same_ops(ops, k, (comm_part_t[]){{1, 0, 512}}, 1), "a bucket within rank 1's shard: one operation rooted at 1");
  size_t zero[2] = {0, 0};
  tap_ok(comm_parts_rooted(2, zero, zero, ops) == 0 && comm_parts_extent(2, zero, zero) == 0,
         "an empty bucket: no operation, nothing to stage");
  /* an all-gather's parts need not follow each other: rank order, not offset order; the span ends
   * at the furthest part (rank 2's empty part at 40 does not count) */
  size_t offg[3] = {10, 0, 40}, cntg[3] = {3, 4, 0};
  k = comm_parts_rooted(3, offg, cntg, ops);
  tap_ok(same_ops(ops, k, (comm_part_t[]){{0, 10, 3}, {1, 0, 4}}, 2) && comm_parts_extent(3, offg, cntg) == 13,
         "parts out of order with a gap: rank order, span 13 floats (%zu)", comm_parts_extent(3, offg, cntg));
}

/* A slab of tensors cut into R shards, bucketed in pieces of `bucket` floats from the end, as the
 * sharded optimizer does: over all buckets, rank r roots exactly its shard's floats, and each
 * bucket's operations move the bucket (the reduce-scatter's meter: n floats on every rank). */
static void check_shards(int R, size_t bucket) {
  slab_layout_t L;
  slab_layout_init(&L);
  slab_layout_add(&L, "embed", 2, (int[]){50, 16}, 0);
  slab_layout_add(&L, "fc1.w", 2, (int[]){64, 16}, 1);
  slab_layout_add(&L, "fc1.b", 1, (int[]){64}, 1);
  slab_layout_add(&L, "fc2.w", 2, (int[]){10, 64}, 2);
  size_t bounds[9], rooted[8] = {0}, off[8], cnt[8];
  shard_bounds(&L, R, bounds);
  comm_part_t ops[8];
  int every_bucket_whole = 1, nops = 0;
  for (size_t end = L.total; end > 0;) {
    size_t start = end > bucket ? end - bucket : 0, moved = 0;
    shard_parts(bounds, R, start, end - start, off, cnt);
    int k = comm_parts_rooted(R, off, cnt, ops);
    for (int i = 0; i < k; i++) rooted[ops[i].root] += ops[i].n, moved += ops[i].n;
    every_bucket_whole &= moved == end - start;
    nops += k;
    end = start;
  }
  int shards_ok = 1;
  for (int r = 0; r < R; r++) shards_ok &= rooted[r] == bounds[r + 1] - bounds[r];
  tap_ok(shards_ok && every_bucket_whole,
         "%d ranks, buckets of %zu floats: each bucket's operations move the bucket, rank r roots its shard's "
         "floats over all (%d operations)", R, bucket, nops);
  slab_layout_free(&L);
}

static void check_consecutive(void) {
  char why[256] = "";
  size_t off[3] = {0, 4, 4}, cnt[3] = {4, 0, 6};
  tap_ok(comm_parts_consecutive(3, off, cnt, 10, 100, why, sizeof why) == 0, "consecutive parts of 10 floats pass");
  size_t gap[3] = {0, 5, 5};
  tap_ok(comm_parts_consecutive(3, gap, cnt, 10, 100, why, sizeof why) != 0 && strstr(why, "rank 1's part"),
         "a gap before rank 1's part is refused: %s", why);
  tap_ok(comm_parts_consecutive(3, off, cnt, 11, 100, why, sizeof why) != 0 && strstr(why, "hold 10 floats of 11"),
         "parts short of the buffer are refused: %s", why);
  tap_ok(comm_parts_consecutive(3, off, cnt, 10, 5, why, sizeof why) != 0 && strstr(why, "rank 2's part"),
         "a part beyond one message is refused: %s", why);
}

int main(void) {
  check_rooted();
  check_shards(1, 1000);
  check_shards(2, 300);
  check_shards(3, 4096);
  check_shards(4, 100);
  check_shards(8, 257);
  check_consecutive();
  return tap_done();
}
