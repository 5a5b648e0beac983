/* The deck's keys of the gradient synchronisation ([parallel]; doc/design.md). */
#include "sync/options.h"

#define CFG_OPTS sync_opts_t
// clang-format off: the table reads best one key per row
static const cfg_key_t rows[] = {
    CFG_FLOAT_KEY("parallel", "bucket_mb", bucket_mb, "1", 0, CFG_OPEN, 1024, CFG_CLOSED,
                  "gradient allreduce bucket size in MiB (buckets hold whole tensors; a larger tensor is one "
                  "bucket)"),
    CFG_BOOL_KEY("parallel", "overlap", overlap, "true",
                 "start each gradient bucket's allreduce during the backward pass as soon as its gradients are "
                 "final (false: all buckets after the backward pass, behind a barrier)"),
    CFG_BOOL_KEY("parallel", "node_shared", node_shared, "true",
                 "dp with all ranks on one node and a host-memory backend (cpu, ref): sum gradients and update "
                 "parameters through node-shared memory, each rank its 1/R slice of the slab (false, or ranks "
                 "on several nodes: allreduce in buckets, every rank updates all; doc/design.md)"),
    CFG_BOOL_KEY("parallel", "shard_optimizer", shard_optimizer, "false",
                 "dp, burst and 3d (dp > 1): a distributed optimizer (ZeRO stage 1): "
                 "gradients reduce-scattered in buckets over the ranks that sum them (dp: all; burst: each rank "
                 "set; 3d: each stage's dp group, the word embedding over the first and last stage's), each rank "
                 "updating its shard with moments held for that shard only, the parameters all-gathered after "
                 "the update; where node_shared applies (dp on one node, a host-memory backend), node-shared "
                 "memory sums and its slices are the shards; with 3d's [compress] sc_stages the compressed stages "
                 "sum with PowerSGD instead, each rank updating its shard of the whole sums; on a GPU backend the "
                 "collectives go through NCCL or staged as [backend] device_comm says (doc/design.md)"),
};
// clang-format on

const cfg_part_t sync_options = {
    .name = "sync", .keys = rows, .nkeys = CFG_NROWS(rows), .size = sizeof(sync_opts_t)};
