# The multiplexing tests' pair (sourced after tap.sh; test_multiplex.sh, test_mux_thread*.sh): a
# foreground vgg-mini burst job on 2 ranks whose plan leaves rank 1 idle for the second half of the
# network, $FG (give it -D run.steps=N), and an mlp background deck, $BG (its keys in $MLP); same A B:
# bitwise equal parameters (h5_compare's words in $tap_tmp/cmp.txt).
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
export OMPI_MCA_rmaps_base_oversubscribe=1
h5_compare="$top_build/tests/h5_compare"
vgg="model.vgg_channels=4,8 model.vgg_fc=32"
"$top_build/tests/make_plan" "$top_src/inputs/vgg-mini-fmnist.deck" 2 "$tap_tmp/p.plan" train.global_batch=32 $vgg \
  >/dev/null 2>&1
awk '/^[0-9]+ / && $1 >= 6 { print $1, $2, 1, 0, 32; next } { print }' "$tap_tmp/p.plan" >"$tap_tmp/idle.plan"
FG="$SURGE_TRAIN $top_src/inputs/vgg-mini-fmnist.deck -D model.vgg_channels=4,8 -D model.vgg_fc=32
  -D train.global_batch=32 -D data.train_samples=2000 -D data.test_samples=100 -D run.print_every=100
  -D parallel.mode=burst -D parallel.plan=$tap_tmp/idle.plan"
MLP="-D model.mlp_hidden=64 -D data.train_samples=5000 -D data.test_samples=100 -D run.eval_every=0
  -D run.print_every=1000 -D train.lr=0.1"
BG="$SURGE_TRAIN $top_src/inputs/mlp-fmnist.deck $MLP"
same() { "$h5_compare" "$1" "$2" 0 >"$tap_tmp/cmp.txt" 2>&1; }
# The background deck in-process: --background-deck with $MLP as bg: overrides.
IN="--background-deck $top_src/inputs/mlp-fmnist.deck $(echo $MLP | sed 's/-D /-D bg:/g')"
# in_process OUT ARGS...: $FG on 2 ranks with its backgrounds in its processes (placement = thread;
# one 1-rank background per rank unless ARGS set multiplex.background_ranks), output in OUT
in_process() {
  ip_out=$1
  shift
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n 2 $FG -D multiplex.placement=thread $IN "$@" >"$ip_out" 2>&1
}
last_step() { h5vals "$1" /metrics/step | tail -1; } # LOG: the last step it logged
# newest_of DIR...: the last step logged by the newest of the runs in DIRs (their log.h5)
newest_of() {
  no_k=0
  for no_dir in "$@"; do
    no_s=$(last_step "$no_dir/log.h5")
    [ "${no_s:-0}" -gt $no_k ] && no_k=$no_s
  done
  echo $no_k
}
# resume_beside OUT NP DIR K: an NP-rank background process resumes the checkpoint in DIR (its
# out_dir) to step K beside a 5-step foreground of $FG on 2 ranks (one MPMD launch), output in OUT
resume_beside() {
  timeout 300 "$mpiexec" -n 2 $FG -D run.steps=5 -D "run.out_dir=$tap_tmp/fgr" \
    : -n "$2" $BG --background -D run.steps="$4" -D multiplex.on_foreground_end=continue -D "run.out_dir=$3" \
    --resume >"$1" 2>&1
}
# resume_in_process OUT DIR K ARGS...: in-process backgrounds (in_process, with ARGS) resume the
# checkpoints in DIR (their out_dir) to step K beside a 5-step foreground, output in OUT
resume_in_process() {
  rp_out=$1 rp_dir=$2 rp_k=$3
  shift 3
  in_process "$rp_out" -D run.steps=5 -D "run.out_dir=$tap_tmp/fgr2" -D bg:run.steps="$rp_k" \
    -D bg:multiplex.on_foreground_end=continue -D bg:checkpoint.resume=true -D "bg:run.out_dir=$rp_dir" "$@"
}
# exited_ok RC OUT WHAT: the check that a run exited 0 (its output's last lines shown when not)
exited_ok() {
  tap_ok "$1" "$3: exit $1"
  [ "$1" = 0 ] || tap_diag "$(shown "$2" | tail -15)"
}
