#!/bin/sh
# Data parallelism through node-shared memory ([parallel] node_shared, sync/node_sum.h): on one
# node, each rank sums and updates its slice of the slab. On 3 ranks (uneven slices) with AdamW and
# a clip norm that clips every step, it ends with the parameters of 1 rank and of the allreduce
# path (node_shared = false) within 1e-5 per tensor; a run stopped at a checkpoint and resumed ends
# bit for bit where a straight run ends (the moments each rank keeps only for its slice are
# gathered whole into the checkpoint); it says which path it took, and falls back to the allreduce
# path, saying why, where the backing file system lacks the room.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
compare="$top_build/tests/h5_compare"
deck="$top_src/inputs/mlp-fmnist.deck"
common="-D model.mlp_hidden=96,64 -D train.global_batch=24 -D train.optimizer=adamw -D train.lr=0.003
        -D train.clip_norm=0.05 -D data.train_samples=600 -D data.test_samples=40 -D run.print_every=1
        -D run.eval_every=0 -D run.overwrite=true"
run() { # run NAME NP ARGS...: train into $tap_tmp/NAME
  name=$1; np=$2; shift 2
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$deck" $common -D "run.out_dir=$tap_tmp/$name" "$@" \
    >"$tap_tmp/$name.txt" 2>&1
}
same() { # same A B TOL DESCRIPTION: compare two runs' final parameters
  res=$("$compare" "$tap_tmp/$1/model.h5" "$tap_tmp/$2/model.h5" "$3" 2>&1)
  tap_ok $? "$4: $res"
}

run one 1 -D run.steps=8
tap_ok $? "8 steps on 1 rank"
run shared 3 -D run.steps=8
tap_ok $? "8 steps on 3 ranks, node-shared"
grep -q "dp: the ranks share one node: gradients summed and parameters updated through node-shared memory" \
  "$tap_tmp/shared.txt"
tap_ok $? "the run says it sums through node-shared memory"
run allreduce 3 -D run.steps=8 -D parallel.node_shared=false
tap_ok $? "8 steps on 3 ranks, allreduce"
! grep -q "node-shared memory" "$tap_tmp/allreduce.txt"
tap_ok $? "node_shared = false takes the allreduce path"
same shared one 1e-5 "3 ranks node-shared = 1 rank"
same allreduce one 1e-5 "3 ranks allreduce = 1 rank"
same shared allreduce 1e-5 "node-shared = allreduce"
# [train] decay = matrices: the slices and the sharded optimizer's shards cut the slab anywhere, a
# bias's floats too; the runs still end with 1 rank's parameters, and the vectors are kept from decay
mx="-D run.steps=8 -D train.weight_decay=0.5 -D train.decay=matrices"
# shellcheck disable=SC2086
run one-mx 1 $mx && run shared-mx 3 $mx && run sharded-mx 3 $mx -D parallel.node_shared=false \
  -D parallel.shard_optimizer=true && run one-all 1 -D run.steps=8 -D train.weight_decay=0.5
tap_ok $? "decay = matrices on 1 rank, 3 node-shared and 3 sharded; decay = all on 1"
same shared-mx one-mx 1e-5 "decay = matrices: 3 ranks node-shared = 1 rank"
same sharded-mx one-mx 1e-5 "decay = matrices: 3 ranks, sharded optimizer = 1 rank"
! "$compare" "$tap_tmp/one-mx/model.h5" "$tap_tmp/one-all/model.h5" 1e-4 >"$tap_tmp/mx-all.txt" 2>&1 &&
  grep -q 'bias' "$tap_tmp/mx-all.txt"
tap_ok $? "decay = matrices differs from decay = all, in the biases: $(grep -m 1 'bias' "$tap_tmp/mx-all.txt" | cut -c1-120)"

# without clipping each rank takes its slice's part of the norm in its update and the parts are
# summed at the barrier after it (its norm plan's NORM_SUM_LAYOUT, optim/norm.h): every step's norm within 1e-5 of
# 1 rank's, and the parameters as 1 rank's
run one_noclip 1 -D run.steps=8 -D train.clip_norm=0 && run shared_noclip 3 -D run.steps=8 -D train.clip_norm=0
tap_ok $? "8 steps on 1 and on 3 ranks node-shared, no clipping"
worst=$(log_worst_rel "$tap_tmp/shared_noclip/log.h5" "$tap_tmp/one_noclip/log.h5" /metrics/grad_norm 8)
at_most "$worst" 1e-5
tap_ok $? "no clipping: the 8 steps' norms summed from the slices' updates = 1 rank's (worst $worst)"
same shared_noclip one_noclip 1e-5 "no clipping: 3 ranks node-shared = 1 rank"

# stopped after the step-4 checkpoint, resumed to step 8: bit for bit the straight run
run half 3 -D run.steps=4 -D checkpoint.every=4
tap_ok $? "4 steps on 3 ranks with a checkpoint"
run half 3 -D run.steps=8 -D checkpoint.every=4 --resume
tap_ok $? "resumed to 8 steps"
h5diff "$tap_tmp/half/model.h5" "$tap_tmp/shared/model.h5" /params /params >/dev/null 2>&1
tap_ok $? "checkpoint + resume ends with bitwise the parameters of the straight run"

# too little room where Open MPI backs shared memory (a container's 64 MiB /dev/shm and a big model):
# the run says so and takes the allreduce path (a 1 MiB tmpfs as the backing directory; as root)
small="$tap_tmp/small-shm"
mkdir -p "$small"
if mount -t tmpfs -o size=1m tmpfs "$small" 2>/dev/null; then
  OMPI_MCA_osc_sm_backing_directory="$small" run cramped 3 -D run.steps=8
  rc=$?
  umount "$small"
  grep -q "dp: allreduce, not node-shared memory: .* has 1.0 MiB free, the 3 ranks' shared slabs need" "$tap_tmp/cramped.txt"
  tap_ok $((rc + $?)) "a 1 MiB backing directory: exit $rc, the allreduce path, saying why"
  same cramped allreduce 0 "and the allreduce path's parameters"
else
  tap_skip "a 1 MiB backing directory: mounting a tmpfs needs root"
  tap_skip "and the allreduce path's parameters"
fi
tap_done
