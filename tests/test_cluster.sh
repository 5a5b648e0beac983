#!/bin/sh
# The emulated cluster under mpiexec (tools/cluster-local-up.sh, doc/cluster.md): 2 nodes x 2 ranks
# through the launch agent, each rank on the node its hostfile slot says; point-to-point bandwidth
# between the nodes follows the configured link rate (100 Mbit/s, then 1 Gbit/s after a reshape),
# within generous bounds (a loaded machine can only make it slower), while two ranks on one node
# stay far faster (shared memory, not the link), and surge-profile's fits find the rate too; a data-parallel run (allreduce, and
# the sharded optimizer with clipped AdamW) and two burst plans across the
# nodes end with the parameters of the 1-rank run (1e-5), the log's internode_bytes_* count what
# crossed, and the link counters show their
# inter-node bytes; a rank killed on one node ends the job on both; and after a kill -9 of mpiexec
# with a job running, cluster-local-down.sh leaves no namespace, link, qdisc or process behind.
# Skipped without root or where the machine does not allow network namespaces.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
. "$top_src/tests/cluster.sh"
cluster_require
started=$(date +%s)
compare="$top_build/tests/h5_compare"
p2p_bw="$top_build/tests/p2p_bw"

cluster_start --nodes 2 --slots 2 --link 100mbit
up=$?
tap_ok $up "a 2-node cluster comes up: $(head -n 1 "$tap_tmp/up.txt")"
[ $up = 0 ] || { tap_diag "$(cat "$tap_tmp/up.txt")"; tap_done; }
name=$CLUSTER_NAME
cluster_inodes "$name" >"$tap_tmp/inodes"

# (1) 4 ranks: 2 on each node, each under its node's host name
cluster_mpiexec 60 4 hostname >"$tap_tmp/hosts.txt" 2>"$tap_tmp/hosts.err" # stderr apart: Open MPI may print notices there
hosts=$(sort "$tap_tmp/hosts.txt" | uniq -c | awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }')
[ "$hosts" = "$name-n0 x2, $name-n1 x2" ]
tap_ok $? "mpiexec --hostfile -n 4 runs 2 ranks on each node: $hosts"

# (2) bandwidth from rank 0 to a rank on its node and to one on the other node, against the rate
# bw_check MIB: p2p_bw's two pairs; the other node within [0.5, 1.1] x the rate, the same node more
# than 2x (no shaped path gets past 1.1x; a loaded machine slows shared memory down to a few Gbit/s)
bw_check() {
  cluster_mpiexec 120 4 "$p2p_bw" "$1" 3 >"$tap_tmp/bw.txt" 2>&1
  rate=$(on_cluster sh -c 'echo $CLUSTER_LINK_BPS')
  other=$(awk '$1 == "pair" && $4 == "other" { print $7 }' "$tap_tmp/bw.txt")
  same=$(awk '$1 == "pair" && $4 == "same" { print $7 }' "$tap_tmp/bw.txt")
  [ -n "$other" ] && awk -v m="$other" -v r="$rate" 'BEGIN { exit !(m >= 0.5 * r / 1e6 && m <= 1.1 * r / 1e6) }'
  tap_ok $? "between the nodes at $(on_cluster sh -c 'echo $CLUSTER_LINK'): ${other:-?} Mbit/s, $(awk -v m="$other" -v r="$rate" 'BEGIN { printf "%.3f", m / (r / 1e6) }') x the rate (bounds 0.5 .. 1.1)"
  [ -n "$same" ] && awk -v m="$same" -v r="$rate" 'BEGIN { exit !(m >= 2 * r / 1e6) }'
  tap_ok $? "within a node: ${same:-?} Mbit/s, not through the shaped link (more than 2 x the rate)"
  [ -n "$other" ] && [ -n "$same" ] || tap_diag "$(cat "$tap_tmp/bw.txt")"
}
bw_check 4
# surge-profile's alpha-beta fits see the same link: point to point between the nodes, and the
# allreduce's bus bandwidth (at 100 Mbit/s, where the link and not the CPUs limits the allreduce).
# A ring over the 4 ranks sends 1.5 x the bytes over each direction of the link, so its bus
# bandwidth is the rate; any allreduce must send the bytes once, so 1.5 x the rate is the most
# (OpenMPI's choice of algorithm decides where between)
cluster_mpiexec 120 4 "$top_build/surge-profile" "$top_src/inputs/mlp-fmnist.deck" -D data.source=synthetic \
  -D model.mlp_hidden=32 -D train.global_batch=16 -o "$tap_tmp/profile.h5" --warmup 1 --repeats 3 \
  >"$tap_tmp/profile.txt" 2>&1
p2p=$(h5vals "$tap_tmp/profile.h5" /profile/network/p2p_beta | awk '{ printf "%.0f", $1 * 8 }')
ar=$(h5vals "$tap_tmp/profile.h5" /profile/network/allreduce_beta | awk '{ printf "%.0f", $1 * 8 }')
grep -q "between ranks 0 and 2 (another node)" "$tap_tmp/profile.txt" &&
  awk -v p="$p2p" -v a="$ar" 'BEGIN { exit !(p >= 50 && p <= 110 && a >= 50 && a <= 155) }'
tap_ok $? "surge-profile at 100mbit: point to point (ranks 0 and 2) ${p2p:-?} Mbit/s (bounds 50 .. 110), allreduce bus bandwidth ${ar:-?} Mbit/s (50 .. 155)"
[ -n "$p2p" ] || tap_diag "$(tail -n 5 "$tap_tmp/profile.txt")"
"$cluster_up" --link 1gbit >"$tap_tmp/reshape.txt" 2>&1
tap_ok $? "up again reshapes the links: $(head -n 1 "$tap_tmp/reshape.txt")"
bw_check 16

# (3) data parallel on 2 x 2 = 1 rank; the gradient allreduce crosses the link
deck="$top_src/inputs/vgg-mini-fmnist.deck"
set -- -D data.source=synthetic -D data.synthetic_samples=400 -D model.vgg_channels=4,8 -D model.vgg_fc=32 \
  -D train.global_batch=20 -D data.test_samples=40 -D run.steps=10 -D run.print_every=10 -D run.overwrite=true
steps=10
timeout 120 "$mpiexec" -n 1 "$SURGE_TRAIN" "$deck" "$@" -D "run.out_dir=$tap_tmp/dp1" >"$tap_tmp/dp1.txt" 2>&1
tap_ok $? "vgg-mini on 1 rank (the reference)"
# sum_of LOG DATASET: the sum of a log's per-step column
sum_of() { h5vals "$1" "$2" | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
# cluster_train OUT NP ARGS...: surge-train on the cluster into $tap_tmp/OUT; sets crossed (the bytes
# through node 0's link meanwhile) and res (the comparison with the 1-rank run, or why it failed)
cluster_train() {
  ct_out=$1 ct_np=$2
  shift 2
  ct_before=$(link_bytes 0)
  cluster_mpiexec 120 "$ct_np" "$SURGE_TRAIN" "$deck" "$@" -D "run.out_dir=$tap_tmp/$ct_out" >"$tap_tmp/$ct_out.txt" 2>&1
  ct_rc=$?
  crossed=$(($(link_bytes 0) - ct_before))
  if [ $ct_rc = 0 ]; then
    res=$("$compare" "$tap_tmp/$ct_out/model.h5" "$tap_tmp/${ct_ref:-dp1}/model.h5" 1e-5 2>&1)
  else
    res="training failed (exit $ct_rc): $(tail -n 3 "$tap_tmp/$ct_out.txt")"
    return 1
  fi
}
cluster_train dp4 4 "$@"
tap_ok $? "data parallel on 2 nodes x 2 ranks = 1 rank: $res"
dp=$(sum_of "$tap_tmp/dp4/log.h5" /metrics/bytes_dp)
# each node must receive the other node's partial sums of all gradients every step: whatever the
# allreduce algorithm, at least bytes_dp / 4 ranks per direction and step, i.e. bytes_dp / 2 in all
[ -n "$dp" ] && [ "$dp" -gt 0 ] && [ "$crossed" -ge $((dp / 2)) ]
tap_ok $? "its allreduce crossed the link: $crossed bytes through node 0's link, the log's bytes_dp $dp (all ranks; at least half must cross)"
internode=$(sum_of "$tap_tmp/dp4/log.h5" /metrics/internode_bytes_dp)
[ -n "$internode" ] && [ "$internode" -gt 0 ] && [ "$internode" = "$dp" ]
tap_ok $? "the log counts the allreduce as crossing nodes: internode_bytes_dp $internode of bytes_dp $dp (the group spans both nodes)"
# the sharded optimizer across the nodes: clipped AdamW against its own 1-rank run; its reduce-scatter
# and all-gather cross the link and the log counts them in their own categories
adamw="-D train.optimizer=adamw -D train.lr=0.001 -D train.clip_norm=0.5"
# shellcheck disable=SC2086
timeout 120 "$mpiexec" -n 1 "$SURGE_TRAIN" "$deck" "$@" $adamw -D "run.out_dir=$tap_tmp/adamw1" >"$tap_tmp/adamw1.txt" 2>&1
tap_ok $? "vgg-mini with clipped AdamW on 1 rank (the sharded optimizer's reference)"
# shellcheck disable=SC2086
ct_ref=adamw1 cluster_train shard4 4 "$@" $adamw -D parallel.shard_optimizer=true
tap_ok $? "the sharded optimizer on 2 nodes x 2 ranks = 1 rank: $res"
scatter=$(sum_of "$tap_tmp/shard4/log.h5" /metrics/bytes_dp_scatter)
gather=$(sum_of "$tap_tmp/shard4/log.h5" /metrics/internode_bytes_dp_gather)
[ -n "$scatter" ] && [ "$scatter" -gt 0 ] && [ "$(sum_of "$tap_tmp/shard4/log.h5" /metrics/internode_bytes_dp_scatter)" = "$scatter" ] &&
  [ -n "$gather" ] && [ "$gather" -gt 0 ] && grep -q "dp: sharded optimizer" "$tap_tmp/shard4.txt"
tap_ok $? "its gradients crossed as dp_scatter ($scatter bytes), its parameters as dp_gather ($gather bytes), counted as crossing nodes"
cluster_train dp2 2 "$@"
tap_ok $? "data parallel on 2 ranks of node 0 = 1 rank: $res"
dp=$(sum_of "$tap_tmp/dp2/log.h5" /metrics/bytes_dp)
[ -n "$dp" ] && [ "$crossed" -lt $((dp / 4)) ]
tap_ok $? "on one node the allreduce stays off the link: $crossed bytes through it (control and output), bytes_dp $dp"
internode=$(sum_of "$tap_tmp/dp2/log.h5" /metrics/internode_bytes_dp)
[ "$internode" = 0 ]
tap_ok $? "and the log counts none of it as crossing nodes: internode_bytes_dp ${internode:-missing}"

# (4) burst plans across the nodes = 1 rank: the planner's (its last layers on rank 0 alone) and a
# split one (the convolutions on node 0's ranks, the rest on node 1's: every activation crosses)
"$top_build/tests/make_plan" "$deck" 4 "$tap_tmp/planner.plan" data.source=synthetic train.global_batch=20 \
  model.vgg_channels=4,8 model.vgg_fc=32 >"$tap_tmp/planner.txt" 2>&1
tap_ok $? "tests/make_plan writes the planner's 4-rank vgg-mini plan"
awk '/^[0-9]+ / { print $1, $2, 2, ($1 >= 6 ? 2 : 0), 10; next } { print }' "$tap_tmp/planner.plan" >"$tap_tmp/split.plan"
cluster_train burst-planner 4 "$@" -D parallel.mode=burst -D "parallel.plan=$tap_tmp/planner.plan"
tap_ok $? "burst, the planner's plan, on 2 nodes x 2 ranks = 1 rank: $res"
cluster_train burst-split 4 "$@" -D parallel.mode=burst -D "parallel.plan=$tap_tmp/split.plan"
tap_ok $? "burst, node 0 then node 1, on 2 nodes x 2 ranks = 1 rank: $res"
act=$(($(sum_of "$tap_tmp/burst-split/log.h5" /metrics/bytes_activation) + \
  $(sum_of "$tap_tmp/burst-split/log.h5" /metrics/bytes_activation_grad)))
[ "$act" -gt 0 ] && [ "$crossed" -ge "$act" ]
tap_ok $? "its activations and their gradients crossed the link: $crossed bytes through it, the log's activation bytes $act"
internode=$(($(sum_of "$tap_tmp/burst-split/log.h5" /metrics/internode_bytes_activation) + \
  $(sum_of "$tap_tmp/burst-split/log.h5" /metrics/internode_bytes_activation_grad)))
[ "$internode" = "$act" ]
tap_ok $? "the log counts every activation byte as crossing nodes: internode_bytes_activation(_grad) $internode of $act"

# (5) a rank killed on node 1 ends the job on both nodes
cluster_mpiexec 120 4 "$SURGE_TRAIN" "$deck" "$@" -D run.steps=100000 -D run.print_every=100000 \
  -D "run.out_dir=$tap_tmp/killed" >"$tap_tmp/killed.txt" 2>&1 &
job=$!
tap_wait_until 60 test -s "$tap_tmp/killed/log.h5"
victim=$(node_pids 1 surge-train | head -n 1)
t0=$(date +%s)
[ -n "$victim" ] && kill -9 "$victim"
wait $job
rc=$?
tap_wait_until 10 ranks_gone
alive=$(node_pids 0 surge-train; node_pids 1 surge-train)
[ -n "$victim" ] && [ $rc != 0 ] && [ -z "$alive" ]
tap_ok $? "rank $victim on $name-n1 killed: mpiexec exits $rc after $(($(date +%s) - t0)) s, no rank left on either node${alive:+ (left: $alive)}"

# (6) kill -9 of the launcher (mpiexec) while its job runs, then down: nothing of the cluster stays
cluster_objects "$name" "$tap_tmp/inodes" "$CLUSTER_LOCAL_DIR" >"$tap_tmp/objects-up.txt"
cluster_mpiexec 120 4 "$SURGE_TRAIN" "$deck" "$@" -D run.steps=100000 -D run.print_every=100000 \
  -D "run.out_dir=$tap_tmp/orphan" >"$tap_tmp/orphan.txt" 2>&1 &
tap_wait_until 60 test -s "$tap_tmp/orphan/log.h5"
# the mpiexec of this job: its command line names the job's output directory
launcher=
for p in /proc/[0-9]*; do
  [ "$(cat "$p/comm" 2>/dev/null)" = mpiexec ] && tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF "run.out_dir=$tap_tmp/orphan " &&
    launcher=${p#/proc/}
done
cluster_objects "$name" "$tap_tmp/inodes" "$CLUSTER_LOCAL_DIR" >"$tap_tmp/objects-running.txt"
[ -n "$launcher" ] && kill -9 "$launcher"
wait
"$cluster_down" >"$tap_tmp/down.txt" 2>&1
down=$?
cluster_objects "$name" "$tap_tmp/inodes" "$CLUSTER_LOCAL_DIR" >"$tap_tmp/objects-down.txt"
tap_diag "before: $(grep -c . "$tap_tmp/objects-up.txt") objects ($(awk '{ print $1 }' "$tap_tmp/objects-up.txt" | sort | uniq -c | tr -s ' \n' ' ')); with the job: $(grep -c '^process' "$tap_tmp/objects-running.txt") processes in the namespaces"
[ $down = 0 ] && [ -n "$launcher" ] && [ ! -s "$tap_tmp/objects-down.txt" ] && [ ! -e "$CLUSTER_LOCAL_DIR" ] &&
  grep -q '^namespace' "$tap_tmp/objects-up.txt" && grep -q '^qdisc' "$tap_tmp/objects-up.txt" &&
  [ "$(grep -c ' surge-train$' "$tap_tmp/objects-running.txt")" = 4 ]
tap_ok $? "kill -9 of mpiexec ($launcher) with 4 ranks running, then down: $(cat "$tap_tmp/down.txt"); left: $(grep -c . "$tap_tmp/objects-down.txt") objects"
[ -s "$tap_tmp/objects-down.txt" ] && tap_diag "$(cat "$tap_tmp/objects-down.txt")"
tap_diag "cluster test took $(($(date +%s) - started)) s"
tap_done
