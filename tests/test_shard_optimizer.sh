#!/bin/sh
# The distributed optimizer ([parallel] shard_optimizer, src/sync/shard.h) on dp: 10 AdamW steps with
# clipping (the norm is above clip_norm at every step, checked) on 4 and 3 ranks reproduce 1 rank
# within 1e-5 (mlp, and the gpt with its tied embedding); each rank's optimizer-state bytes, as the
# run prints them, are its shard's moments and the shards tile the slab; a sharded checkpoint
# resumes on 1 rank and on 2 ranks unsharded, and an unsharded one resumes sharded, all ending
# within 1e-5 of the straight 1-rank run. The 3d layout and burst plans: tests/test_shard_layouts.sh.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
. "$top_src/tests/same_params.sh" # same NAME REF WHAT
. "$top_src/tests/zoo_models.sh"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
compare="$top_build/tests/h5_compare"

common="-D run.print_every=10 -D train.global_batch=20 -D data.test_samples=40 -D run.overwrite=true
  -D train.optimizer=adamw -D train.lr=0.001 -D train.clip_norm=0.5"
# small buckets: several reduce-scatters and all-gathers per step, waited for node by node
shard="-D parallel.shard_optimizer=true -D parallel.node_shared=false -D parallel.bucket_mb=0.02"
run() { # run NAME NP DECK ARGS...: train into $tap_tmp/NAME
  name=$1; np=$2; deck=$3; shift 3
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$top_src/inputs/$deck" $common -D "run.out_dir=$tap_tmp/$name" "$@" \
    >"$tap_tmp/$name.txt" 2>&1
}
# opt_line NAME: the run's "optimizer state per rank: bytes B... for slab floats F... of N" line
opt_line() { grep '^optimizer state per rank: bytes' "$tap_tmp/$1.txt"; }

for model in mlp gpt; do
  zoo_model $model 10
  # shellcheck disable=SC2086
  run "$model-1" 1 "$deck" $args -D run.steps=10
  tap_ok $? "$model: 1 rank, 10 AdamW steps with clip_norm 0.5"
  low=$(h5vals "$tap_tmp/$model-1/log.h5" /metrics/grad_norm | awk '$1 <= 0.5 { n++ } END { print n + 0 }')
  [ "$low" = 0 ]
  tap_ok $? "$model: the gradient norm is above clip_norm at every step (clipping acts; $low steps below)"
  for np in 4 3; do
    # shellcheck disable=SC2086
    run "$model-s$np" $np "$deck" $args $shard -D run.steps=10
    grep -q "dp: sharded optimizer" "$tap_tmp/$model-s$np.txt"
    tap_ok $? "$model: the banner on $np ranks says the optimizer is sharded"
    # shellcheck disable=SC2086
    same "$model-s$np" "$model-1" "$model: sharded on $np ranks = 1 rank" $extra
  done
done

# the memory accounting: each rank's bytes are 2 moments x 4 bytes x its shard; the shards tile the
# slab, each within a row of fc1 (784 floats) of an even split; 1 rank holds the whole slab's
line1=$(opt_line mlp-1); line4=$(opt_line mlp-s4)
echo "# 1 rank: $line1"
echo "# 4 ranks: $line4"
echo "$line4" | awk '{ nb = 0; nf = 0; f = 0
    for (i = 1; i <= NF; i++) { if ($i == "bytes") mode = 1; else if ($i == "floats") mode = 2; else if ($i == "of") mode = 3; else if ($i == "for" || $i == "slab") mode = 0
      else if (mode == 1) b[nb++] = $i; else if (mode == 2) fl[nf++] = $i; else if (mode == 3) total = $i }
    if (nb != 4 || nf != 4) exit 1
    for (r = 0; r < 4; r++) { if (b[r] != 8 * fl[r]) exit 1; s += fl[r]; d = fl[r] - total / 4; if (d < 0) d = -d; if (d > 784) exit 1 }
    exit s == total ? 0 : 1 }'
tap_ok $? "4 ranks: each rank's optimizer-state bytes are its shard's 2 moments, the shards tile the slab evenly"
total=$(echo "$line1" | awk '{ print $NF }')
echo "$line1" | grep -q "bytes $((8 * total)) for slab floats $total of $total"
tap_ok $? "1 rank: the optimizer state is the whole slab's ($((8 * total)) bytes)"
run mlp-u4 4 mlp-fmnist.deck -D model.mlp_hidden=64,32 -D data.train_samples=400 -D parallel.node_shared=false -D run.steps=1
opt_line mlp-u4 | grep -q "bytes $((8 * total)) $((8 * total)) $((8 * total)) $((8 * total)) for"
tap_ok $? "4 ranks unsharded: every rank holds the whole slab's moments (the accounting can tell them apart)"
# the per-rank memory report (bench/bench_memory.sh reads it): "memory by rank (bytes): peak P...; steps
# peak S...; before model B...; state T...; activations A..." with a value per rank in each list,
# B < S <= P (the model is resident, the peak only grows); each rank's state is exactly the
# parameters and gradients (4 bytes a slab float each), its activations and its optimizer-state
# bytes (the optimizer line's); the largest is the "training state" of the memory line (in MiB)
memory_ok() { # memory_ok NAME NP: NAME's memory report is well formed as above
  { sed -n 's/^memory per rank: training state \([0-9.]*\) MiB.*/\1/p' "$tap_tmp/$1.txt"
    opt_line "$1" | sed 's/.*bytes \(.*\) for slab.* of \([0-9]*\)$/\2 \1/'
    sed -n 's/^memory by rank (bytes): //p' "$tap_tmp/$1.txt"; } | awk -v np="$2" -F';' '
    NR == 1 { top = $1 } NR == 2 { no = split($1, o, " ") - 1 }
    NR == 3 { for (q = 1; q <= NF; q++) { n = split($q, w, " "); k = 0
        for (i = 1; i <= n; i++) if (w[i] ~ /^[0-9]+$/) v[++k, q] = w[i]; if (k != np) bad = 1 }
      found = 1; for (r = 1; r <= np; r++) {
        if (!(v[r, 3] < v[r, 2] && v[r, 2] <= v[r, 1])) bad = 1
        if (v[r, 4] != 8 * o[1] + v[r, 5] + o[r + 1]) bad = 1
        if (v[r, 4] > max) max = v[r, 4] } }
    END { d = max / 1048576 - top; exit !(!bad && found && no == np && d < 0.05 && d > -0.05) }'
}
memory_ok mlp-u4 4
tap_ok $? "4 ranks unsharded: the run reports each rank's peak, steps peak, memory before the model, and its state = 8 bytes a parameter + activations + moments"
memory_ok mlp-s4 4
tap_ok $? "4 ranks sharded: the same report, each rank's state holding its shard's moments"

# checkpoints: sharded on 4 ranks for 5 steps, then 10 steps in all on 1 rank and on 2 ranks unsharded;
# unsharded on 1 rank for 5 steps, then sharded on 3 ranks
zoo_model mlp 10
# shellcheck disable=SC2086
run half-s4 4 mlp-fmnist.deck $args $shard -D run.steps=5
tap_ok $? "mlp: 5 steps sharded on 4 ranks (checkpoint of step 5)"
"$compare" "$tap_tmp/half-s4/model.h5" "$tap_tmp/mlp-1/model.h5" 1e-5 >/dev/null 2>&1
[ $? = 1 ]
tap_ok $? "5 steps and 10 steps differ beyond the tolerance (the comparisons can fail)"
resume() { # resume NAME FROM NP ARGS...: copy FROM's output to NAME, resume it to 10 steps on NP ranks
  name=$1; from=$2; np=$3; shift 3
  rm -rf "${tap_tmp:?}/$name"; cp -r "$tap_tmp/$from" "$tap_tmp/$name"
  # shellcheck disable=SC2086
  run "$name" "$np" mlp-fmnist.deck $args -D run.steps=10 "$@" --resume
}
resume back-1 half-s4 1
grep -q "resumed from .*ckpt-00000005.h5 at step 5" "$tap_tmp/back-1.txt"
tap_ok $? "the sharded checkpoint resumes on 1 rank"
same back-1 mlp-1 "sharded 4 ranks -> 1 rank = 1 rank"
resume back-2 half-s4 2 -D parallel.node_shared=false
same back-2 mlp-1 "sharded 4 ranks -> 2 ranks unsharded = 1 rank"
# shellcheck disable=SC2086
run half-1 1 mlp-fmnist.deck $args -D run.steps=5
# shellcheck disable=SC2086
resume fwd-s3 half-1 3 $shard
grep -q "dp: sharded optimizer" "$tap_tmp/fwd-s3.txt"
tap_ok $? "the unsharded checkpoint resumes sharded on 3 ranks"
same fwd-s3 mlp-1 "unsharded 1 rank -> sharded 3 ranks = 1 rank"

# on one node node-shared memory sums (the banner says so, or why not), its slices the shards, so the
# moments are the shards' there too; such a checkpoint resumes on 1 rank
# shellcheck disable=SC2086
run both-3 3 mlp-fmnist.deck $args -D parallel.shard_optimizer=true -D run.steps=10
grep -q "slices are its shards\|sharded optimizer.*not node-shared memory" "$tap_tmp/both-3.txt"
tap_ok $? "node_shared and shard_optimizer on one node: the banner says which runs"
same both-3 mlp-1 "node_shared with shard_optimizer on 3 ranks = 1 rank"
opt_line both-3 | grep -q "bytes $(opt_line mlp-s3 | sed 's/.*bytes \(.*\) for.*/\1/') for"
tap_ok $? "node_shared with shard_optimizer: each rank's optimizer state is its shard's, as without node_shared"
# shellcheck disable=SC2086
run both-half 3 mlp-fmnist.deck $args -D parallel.shard_optimizer=true -D run.steps=5
resume both-back both-half 1
same both-back mlp-1 "node_shared with shard_optimizer, 3 ranks -> 1 rank = 1 rank"

tap_done
