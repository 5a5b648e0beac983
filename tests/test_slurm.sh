#!/bin/sh
# The job scripts in jobscripts/ on a private one-node Slurm (tools/slurm-local-up.sh): a training
# job leaves its log, model and checkpoints; a 3-variant sweep runs as a job array and a report job
# that depends on it runs after it and tables all variants; a job stopped by SIGUSR1 mid-run
# requeues itself, resumes from its checkpoint and ends bitwise where an uninterrupted run ends;
# a burst foreground and a background multiplexed in one job (burst-bg.sbatch) both train, the
# background stops with a checkpoint when the foreground ends, both resume after a requeue, and a
# failing background leaves the foreground and the job alone.
# Skipped where Slurm is not installed or not root (slurmd starts jobs as their users).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
for p in sbatch squeue scontrol scancel slurmctld slurmd; do
  command -v $p >/dev/null 2>&1 || tap_skip_all "Slurm is not installed ($p missing; tools/install-deps.sh installs it)"
done
[ "$(id -u)" = 0 ] || tap_skip_all "the local Slurm (slurmd) needs root"
started=$(date +%s)
jobs="$top_src/jobscripts"
surge_sweep="$top_build/surge-sweep"
surge_report="$top_build/surge-report"

# A private cluster: its own state directory and ports (free ones, so that a developer's local Slurm
# or another test run is left alone), no munged (auth/none: nothing shared with another cluster),
# requeued jobs eligible after 5 s instead of 120 s.
export SLURM_LOCAL_DIR="$tap_tmp/slurm"
port=$((10000 + ($$ % 5000) * 2))
while ss -Hltn 2>/dev/null | grep -qE ":($port|$((port + 1))) "; do port=$((port + 2)); done
export SLURM_LOCAL_PORT=$port
export SLURM_CONF="$SLURM_LOCAL_DIR/etc/slurm.conf"
trap '"$top_src/tools/slurm-local-down.sh" >/dev/null 2>&1; rm -rf "$tap_tmp"' EXIT
trap 'exit 1' INT TERM
NCPUS=8 CRED_EXPIRE=5 AUTH=none "$top_src/tools/slurm-local-up.sh" >"$tap_tmp/up.txt" 2>&1
up=$?
tap_ok $up "a local Slurm comes up on port $port: $(tail -n 2 "$tap_tmp/up.txt" | head -n 1)"
[ $up = 0 ] || { tap_diag "$(cat "$tap_tmp/up.txt")"; tap_done; }
cd "$tap_tmp" || exit 1

# wait_job ID SECONDS: until the job (every task of an array) has left the queue; 1 on timeout.
# Every wait is bounded: a job Slurm can never start pends forever.
job_gone() { ! squeue -h -j "$1" 2>/dev/null | grep -q .; }
wait_job() {
  tap_wait_until "$2" job_gone "$1" ||
    { tap_diag "job $1 still queued after $2 s: $(squeue -h -j "$1" -o '%i %T %r')"; return 1; }
}
# job_field ID KEY: the values of KEY in `scontrol show job ID` (one line per job; an array: per task)
job_field() { scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# all_equal VALUE LINES: every line of LINES is VALUE (and there is one at least)
all_equal() { [ -n "$2" ] && ! printf '%s\n' "$2" | grep -qvx "$1"; }
# lap WHAT: the seconds since the last lap, as a TAP comment
lap_at=$started
lap() { now=$(date +%s); tap_diag "$1: $((now - lap_at)) s"; lap_at=$now; }
# ok_or_show STATUS FILE DESCRIPTION: tap_ok, and the end of the job's output when it failed
ok_or_show() { tap_ok "$1" "$3"; [ "$1" = 0 ] || tap_diag "$(tail -n 15 "$2" 2>/dev/null)"; }
submit() { sbatch --parsable --export="ALL,SURGE_BIN=$top_build" "$@"; }

# a small mlp on synthetic data: ~2000 steps of about a millisecond, a checkpoint every 100
cat >train.deck <<'EOF'
[run]
name = slurm-train
steps = 2000
print_every = 500
[model]
zoo = mlp
mlp_hidden = 128,128
[data]
source = synthetic
synthetic_samples = 1024
[train]
global_batch = 64
[checkpoint]
every = 100
EOF

# (1) train.sbatch, 2 ranks through srun --mpi=pmix
job=$(submit "$jobs/train.sbatch" train.deck -D run.out_dir=straight)
wait_job "$job" 60
state=$(job_field "$job" JobState) code=$(job_field "$job" ExitCode)
[ "$state" = COMPLETED ] && [ "$code" = 0:0 ]
ok_or_show $? surge-train-"$job".out "train.sbatch job $job ends $state with exit code $code"
grep -q "on 2 ranks" surge-train-"$job".out
tap_ok $? "it trained on 2 ranks: $(grep -o 'global batch .* on 2 ranks' surge-train-"$job".out)"
[ -s straight/log.h5 ] && [ -s straight/model.h5 ] && ls straight/checkpoints/ckpt-00002000.h5 >/dev/null 2>&1
tap_ok $? "it leaves log.h5, model.h5 and checkpoints/ckpt-00002000.h5: $(cd straight/checkpoints && echo *)"
rows=$(h5ls straight/log.h5/metrics/step 2>/dev/null | grep -o '{[0-9]*' | tr -d '{')
[ "$rows" = 2000 ] && h5ls straight/model.h5/params 2>/dev/null | grep -q weight
tap_ok $? "log.h5 holds 2000 steps ($rows), model.h5 the /params"
lap "Slurm up and one training job"

# (2) a 3-variant sweep as a job array, and a report job that waits for it
cat >sweep.deck <<'EOF'
[run]
name = slurm-sweep
steps = 60
print_every = 20
[model]
zoo = mlp
mlp_hidden = 32
[data]
source = synthetic
synthetic_samples = 512
[train]
global_batch = 32
[checkpoint]
every = 20
[sweep]
train.lr = 0.01, 0.02, 0.04
EOF
if [ -x "$surge_sweep" ]; then
  range=$("$surge_sweep" sweep.deck --array)
  [ "$range" = 0-2 ]
  tap_ok $? "surge-sweep --array gives the array range '$range'"
  array=$(submit --array="$range" "$jobs/sweep.sbatch" sweep.deck)
  if [ -x "$surge_report" ]; then
    report=$(submit --dependency=afterok:"$array" "$jobs/report.sbatch" 'runs/slurm-sweep-v*/log.h5')
    [ "$(job_field "$report" JobState)" = PENDING ]
    tap_ok $? "report job $report waits for array $array: $(job_field "$report" Reason)"
  fi
  wait_job "$array" 60
  states=$(job_field "$array" JobState)
  all_equal COMPLETED "$states" && [ "$(printf '%s\n' "$states" | wc -l)" = 3 ]
  tap_ok $? "sweep.sbatch array $array: 3 tasks, states $(printf '%s\n' "$states" | tr '\n' ' ')"
  ok=0
  for v in 0 1 2; do
    [ -s runs/slurm-sweep-v$v/model.h5 ] || ok=1
    grep -q "variant $v" surge-sweep-"$array"_$v.out || ok=1
  done
  tap_ok $ok "each task trained its own variant into runs/slurm-sweep-vI: $(echo runs/*)"
  if [ -x "$surge_report" ]; then
    wait_job "$report" 60
    [ "$(job_field "$report" JobState)" = COMPLETED ]
    tap_ok $? "report job $report ends $(job_field "$report" JobState)"
    last_end=$(job_field "$array" EndTime | sort | tail -n 1)
    report_start=$(job_field "$report" StartTime)
    [ -n "$last_end" ] && ! expr "$report_start" \< "$last_end" >/dev/null
    tap_ok $? "it started ($report_start) after the last variant ended ($last_end)"
    out=surge-report-$report.out
    ok=0
    for v in 0:0.01 1:0.02 2:0.04; do
      grep -E "slurm-sweep-v${v%:*}\b" "$out" | grep -qE "\b${v#*:}\b" || ok=1
    done
    tap_ok $ok "its table lists the 3 variants with their learning rates"
    dir=report-$report
    [ "$(grep -c '^runs/slurm-sweep-v[0-2]/log.h5,' "$dir/runs.csv" 2>/dev/null)" = 3 ] && [ -s "$dir/runs.json" ] &&
      [ -s "$dir/loss.svg" ]
    tap_ok $? "it wrote $dir/runs.csv (3 rows), runs.json and loss.svg: $(cd "$dir" 2>/dev/null && echo *)"
    tap_diag "$(cat "$out")"
    # a slice of a sweep beyond MaxArraySize: task 0 + VARIANT_OFFSET 2 runs variant 2, which had
    # finished: --resume of a finished run leaves its log readable (it logged its last evaluation twice)
    off=$(sbatch --parsable --export="ALL,SURGE_BIN=$top_build,VARIANT_OFFSET=2" --array=0-0 "$jobs/sweep.sbatch" sweep.deck)
    wait_job "$off" 60
    [ "$(job_field "$off" JobState)" = COMPLETED ] && grep -q "surge-train sweep.deck --variant 2:" surge-sweep-"$off"_0.out &&
      "$surge_report" runs/slurm-sweep-v2/log.h5 >/dev/null 2>&1
    tap_ok $? "VARIANT_OFFSET=2: array task 0 of job $off ran variant 2 again (finished: resumed, its log still read)"
  else
    tap_skip "surge-report is not built yet: no report job"
  fi
else
  tap_skip "surge-sweep is not built yet: no sweep job"
fi
lap "sweep and report"

# (3) the deck of (1) stopped by SIGUSR1 once its first checkpoint exists (what --signal=USR1@120
# does before a time limit): the job requeues itself, the next attempt resumes; a report job that
# depends on it waits for the last attempt
job=$(submit "$jobs/train.sbatch" train.deck -D run.out_dir=stopped)
[ -x "$surge_report" ] && report=$(submit --dependency=afterok:"$job" "$jobs/report.sbatch" stopped/log.h5)
# any checkpoint: the first may be pruned (keep = 3) before a poll sees it on a fast machine
tap_wait_until 30 sh -c 'ls "$1"/ckpt-*.h5 >/dev/null 2>&1' sh stopped/checkpoints
scancel --signal=USR1 "$job"
wait_job "$job" 60
out=surge-train-$job.out
grep -q "stopped by a signal after step" "$out" && grep -q "requeueing job $job" "$out"
ok_or_show $? "$out" "job $job: $(grep -o 'stopped by a signal after step [0-9]* of [0-9]*' "$out"), exit 75, requeued itself"
restarts=$(job_field "$job" Restarts) state=$(job_field "$job" JobState)
[ "$restarts" = 1 ] && [ "$state" = COMPLETED ]
tap_ok $? "the requeued job ran again and ended $state (restarts: $restarts)"
grep -q "resumed from .*stopped/checkpoints/ckpt-" "$out"
tap_ok $? "the second attempt $(grep -o 'resumed from .* at step [0-9]*' "$out")"
h5diff stopped/model.h5 straight/model.h5 /params /params >/dev/null 2>&1
tap_ok $? "stopped + requeued + resumed ends with bitwise the parameters of the uninterrupted run"
if [ -x "$surge_report" ]; then
  wait_job "$report" 30
  end=$(job_field "$job" EndTime) report_start=$(job_field "$report" StartTime)
  [ "$(job_field "$report" JobState)" = COMPLETED ] && ! expr "$report_start" \< "$end" >/dev/null
  tap_ok $? "its dependent report job survived the requeue and ran ($report_start) after the last attempt ($end)"
else
  tap_skip "surge-report is not built yet: no report job"
fi

lap "stopped, requeued and resumed job"

# (4) burst-bg.sbatch: a vgg-mini burst foreground on 2 ranks whose plan runs the first half of the
# network on rank 0 and the second half on rank 1 (each rank idle half of the step), and a 2-rank
# mlp background beside it, on the same 2 CPUs of the allocation
make_plan="$top_build/tests/make_plan"
# mux_job SECONDS ARGS...: submit burst-bg.sbatch ARGS and wait for it; sets job, state, code, and
# out (the job's files are $out.out, $out.foreground.out and $out.background.out)
mux_job() {
  mux_wait=$1
  shift
  job=$(submit "$jobs/burst-bg.sbatch" "$@")
  wait_job "$job" "$mux_wait"
  state=$(job_field "$job" JobState) code=$(job_field "$job" ExitCode) out=surge-burst-bg-$job
}
if [ -x "$make_plan" ]; then
  "$make_plan" "$top_src/inputs/vgg-mini-fmnist.deck" 2 dp.plan train.global_batch=32 model.vgg_channels=4,8 \
    model.vgg_fc=32 >make_plan.txt 2>&1
  ok_or_show $? make_plan.txt "tests/make_plan writes a 2-rank vgg-mini plan"
  # nodes 0-5 (input to pool1) on rank 0 only, nodes 6-14 (conv2_1 to fc2) on rank 1 only
  awk '/^[0-9]+ / { print $1, $2, 1, ($1 >= 6 ? 1 : 0), 32; next } { print }' dp.plan >split.plan
  cat >fg.deck <<'EOF'
[run]
name = slurm-fg
steps = 600
print_every = 200
eval_every = 0
[model]
zoo = vgg-mini
vgg_channels = 4,8
vgg_fc = 32
[data]
source = synthetic
synthetic_samples = 512
[train]
global_batch = 32
[parallel]
mode = burst
plan = split.plan
EOF
  # priority = none: the gate still lets it run only while its partner is idle, but SCHED_IDLE
  # would starve it whenever other test suites keep the machine's cores busy
  cat >bg.deck <<'EOF'
[run]
name = slurm-bg
steps = 100000
print_every = 500
[model]
zoo = mlp
mlp_hidden = 64
[data]
source = synthetic
synthetic_samples = 1024
[train]
global_batch = 64
[multiplex]
priority = none
EOF
  mux_job 60 fg.deck bg.deck
  [ "$state" = COMPLETED ] && [ "$code" = 0:0 ] &&
    grep -q "foreground exit status 0, background exit status 0" "$out.out"
  ok_or_show $? "$out.out" "burst-bg.sbatch job $job ends $state with exit code $code; $(grep -o 'foreground exit status.*' "$out.out")"
  fg=runs/slurm-fg bg=runs/slurm-bg
  [ -s $fg/log.h5 ] && [ -s $fg/model.h5 ] && [ -s $bg/log.h5 ] && [ -s "$out.foreground.out" ] &&
    [ -s "$out.background.out" ]
  ok_or_show $? "$out.background.out" "both wrote their logs ($fg/log.h5 and model.h5, $bg/log.h5) and outputs"
  fg_role=$(h5attr $fg/log.h5 /multiplex/role) bg_role=$(h5attr $bg/log.h5 /multiplex/role)
  fg_channel=$(h5attr $fg/log.h5 /multiplex/channel) bg_channel=$(h5attr $bg/log.h5 /multiplex/channel)
  [ "$fg_role" = foreground ] && [ "$bg_role" = background ] && [ "$fg_channel" = "slurm-$job" ] &&
    [ "$bg_channel" = "slurm-$job" ]
  tap_ok $? "/multiplex@role: $fg_role and $bg_role, both on channel $fg_channel"
  h5vals $bg/log.h5 /metrics/loss >bg_loss.txt
  steps=$(wc -l <bg_loss.txt) first=$(head -n 1 bg_loss.txt) last=$(tail -n 1 bg_loss.txt)
  [ "$steps" -gt 1 ] && awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }'
  tap_ok $? "the background trained $steps steps beside it, loss $first -> $last"
  h5dump -d /events/text -y -w 0 -o bg_events.txt $bg/log.h5 >/dev/null 2>&1
  ckpt=$(grep -o "ckpt-0*$steps\.h5" bg_events.txt)
  grep -q '"stopped: the foreground ended"' bg_events.txt && [ -n "$ckpt" ] && [ -s "$bg/checkpoints/$ckpt" ]
  tap_ok $? "it stopped because the foreground ended, with a checkpoint of its last step: $(awk NF bg_events.txt)"
  lap "multiplexed job"

  # (5) the same stopped by SIGUSR1 once the foreground's first checkpoint exists: the job requeues
  # itself on the foreground's exit 75, and the next attempt resumes both from their checkpoints
  job=$(submit "$jobs/burst-bg.sbatch" fg.deck bg.deck -D run.out_dir=fg-stopped -D run.steps=1200 \
    -D checkpoint.every=100 -- -D run.out_dir=bg-stopped)
  out=surge-burst-bg-$job
  tap_wait_until 30 sh -c 'ls "$1"/ckpt-*.h5 >/dev/null 2>&1' sh fg-stopped/checkpoints
  scancel --signal=USR1 "$job"
  wait_job "$job" 90
  restarts=$(job_field "$job" Restarts) state=$(job_field "$job" JobState) code=$(job_field "$job" ExitCode)
  grep -q "foreground exit status 75" "$out.out" && grep -q "requeueing job $job" "$out.out" &&
    [ "$restarts" = 1 ] && [ "$state" = COMPLETED ] && [ "$code" = 0:0 ]
  ok_or_show $? "$out.out" "job $job: the foreground exits 75, the job requeues itself, runs again and ends $state, exit $code (restarts: $restarts)"
  grep -q "resumed from fg-stopped/checkpoints/ckpt-" "$out.foreground.out" && [ -s fg-stopped/model.h5 ] &&
    [ -s fg-stopped/checkpoints/ckpt-00001200.h5 ]
  tap_ok $? "the foreground $(grep -o 'resumed from .* at step [0-9]*' "$out.foreground.out") and finished step 1200"
  grep -q "resumed from bg-stopped/checkpoints/ckpt-" "$out.background.out"
  tap_ok $? "the background $(grep -o 'resumed from .* at step [0-9]*' "$out.background.out")"
  lap "multiplexed job stopped, requeued and resumed"

  # (6) a background that fails (bad input: exit 2) leaves the foreground and the job alone
  mux_job 60 fg.deck bg.deck -D run.out_dir=fg-alone -D run.steps=100 -- -D run.out_dir=bg-bad -D train.lr=-1
  [ "$state" = COMPLETED ] && [ "$code" = 0:0 ] && [ -s fg-alone/model.h5 ] &&
    grep -q "foreground exit status 0, background exit status 2" "$out.out"
  ok_or_show $? "$out.out" "a failing background: job $job ends $state, exit $code, the foreground finished; $(grep -o 'background exit status [0-9]*' "$out.out")"
  lap "multiplexed job with a failing background"
else
  tap_skip "tests/make_plan is not built: no multiplexed job"
fi
# (7) train-3d.sbatch: a small gpt on tp 2 x pp 2 (TP, PP, DP from the environment), 4 tasks; the job
# draws its pipeline after the run
if [ -d /usr/share/games/fortunes ]; then
  job=$(TP=2 PP=2 DP=1 submit --ntasks=4 "$jobs/train-3d.sbatch" "$top_src/inputs/gpt-3d.deck" -D run.out_dir=gpt3d \
    -D run.steps=3 -D model.gpt_layers=2 -D model.gpt_width=32 -D model.gpt_heads=2 -D model.gpt_context=16 \
    -D train.global_batch=8 -D data.test_samples=8 -D run.eval_every=0)
  wait_job "$job" 120
  state=$(job_field "$job" JobState) code=$(job_field "$job" ExitCode)
  out=surge-3d-$job.out
  [ "$state" = COMPLETED ] && [ "$code" = 0:0 ] && grep -q "global batch 8 on 4 ranks (3d)" "$out" && [ -s gpt3d/model.h5 ]
  ok_or_show $? "$out" "train-3d.sbatch job $job (TP=2 PP=2 DP=1, 4 tasks) ends $state with exit code $code"
  [ -s gpt3d/plots/pipeline.svg ] && grep -q "bubble: measured" "$out"
  ok_or_show $? "$out" "it reports the bubble and draws gpt3d/plots/pipeline.svg: $(grep -o 'bubble: .*' "$out")"
  lap "3d job"
else
  tap_skip "the fortunes text is not installed: no 3d job"
fi
tap_diag "Slurm test took $(($(date +%s) - started)) s"
tap_done
