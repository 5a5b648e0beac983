#!/bin/sh
# Fuzz Surge's readers of untrusted input with libFuzzer (doc/security.md, "Fuzzing"):
#   tools/fuzz.sh [SECONDS [HARNESS ...]]      (make fuzz FUZZ_SECONDS=N)
# builds the harnesses of fuzz/ with clang, AddressSanitizer and UndefinedBehaviorSanitizer in a build
# directory of their own ($SURGE_FUZZ_BUILD, default _build-fuzz), makes the seed corpus (the decks
# of inputs/ and the tests, a checkpoint, logs, profiles and plan files written by the instrumented
# programs), runs each harness (default: all nine) for SECONDS (default 60) and prints one line per
# harness: executions, corpus size, findings. A finding leaves its input in fuzz-findings/ of the
# build directory; one in Surge makes the exit status 1. Without clang: exit 77 (skipped).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export SURGE_TOP_SRCDIR="$top" # fuzz_tok reads the test vocabulary from the source tree
secs=${1:-60}
[ $# -gt 0 ] && shift
harnesses=${*:-deck sweep checkpoint log plan profile tok sim graph deeppool weights}
build=${SURGE_FUZZ_BUILD:-$top/_build-fuzz}
command -v clang >/dev/null 2>&1 || { echo "fuzz: clang not found (tools/install-deps.sh installs it)"; exit 77; }
export OMPI_CC=clang OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# ASan: no leak checks (a harness leaves what a reader allocated before an input error; the programs
# exit there), and a failed allocation returns NULL as malloc does without ASan (HDF5 asks for what a
# damaged file says and handles NULL; Surge's own allocations are bounded before they are made);
# UBSan: every report is fatal
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# Open MPI's own handlers of SIGABRT and SIGSEGV would take a crash from libFuzzer, which then keeps
# no input of it
export OMPI_MCA_opal_signal=""

mkdir -p "$build" && cd "$build" || exit 1
[ -x "$top/configure" ] || (cd "$top" && ./bootstrap) || exit 1
if [ ! -f Makefile ]; then
  "$top/configure" -q CC=mpicc \
    CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
    LDFLAGS="-fsanitize=address,undefined" || { echo "fuzz: configure failed (see $build/config.log)"; exit 1; }
fi
# clang does not take the -fvect-cost-model of the project's GCC flags
make -j"$(nproc)" AM_CFLAGS="-std=c11 -Wall -Wextra -g" fuzz-programs >make-fuzz.out 2>&1 || { tail -n 30 make-fuzz.out; echo "fuzz: build failed"; exit 1; }

# ---- seed corpus
seeds="$build/fuzz-seeds"
rm -rf "$seeds"
mkdir -p "$seeds/deck" "$seeds/sweep" "$seeds/checkpoint" "$seeds/log" "$seeds/plan" "$seeds/profile" "$seeds/tok" \
  "$seeds/sim" "$seeds/graph" "$seeds/deeppool" "$seeds/weights"
for f in "$top"/tests/data/tok/*.txt; do # mode 0 (text), then the vocabulary files as modes 1 and 2
  { printf '\000'; cat "$f"; } >"$seeds/tok/$(basename "$f")"
done
{ printf '\001'; cat "$top/tests/data/tok/hf/vocab.json"; } >"$seeds/tok/vocab.json"
{ printf '\002'; cat "$top/tests/data/tok/hf/merges.txt"; } >"$seeds/tok/merges.txt"
for d in "$top"/inputs/*.deck "$top"/tests/data/decks/*.deck; do
  cp "$d" "$seeds/deck/" && cp "$d" "$seeds/sweep/"
done
SURGE_FUZZ_SEED_DIR="$seeds/checkpoint" fuzz/fuzz_checkpoint >/dev/null 2>&1 ||
  echo "fuzz: warning: no checkpoint seed was written"
SURGE_FUZZ_SEED_DIR="$seeds/weights" fuzz/fuzz_weights >/dev/null 2>&1 ||
  echo "fuzz: warning: no weights seeds were written"
cat >"$seeds/tiny.deck" <<DECK
[run]
steps = 12
eval_every = 6
[model]
zoo = mlp
mlp_hidden = 8
[data]
source = synthetic
synthetic_samples = 256
test_samples = 16
[train]
global_batch = 4
[log]
flush_every = 4
[checkpoint]
every = 6
compression = none
DECK
for np in 1 2; do
  mpiexec --oversubscribe -n $np ./surge-train "$seeds/tiny.deck" -D "run.out_dir=$seeds/run$np" >/dev/null 2>&1 &&
    cp "$seeds/run$np/log.h5" "$seeds/log/log-np$np.h5" &&
    cp "$seeds/run$np/checkpoints/ckpt-00000012.h5" "$seeds/checkpoint/ckpt-mlp8-np$np.h5" ||
    echo "fuzz: warning: the $np-rank seed run failed"
done
cp "$top"/tests/data/reference/*.h5 "$seeds/log/" 2>/dev/null
# profiles of the planner harnesses' model (1 rank; 2 ranks, network measured; for 4 ranks) and plan
# files of it for 4 ranks (without and with an amplification limit)
SURGE_FUZZ_SEED_DIR="$seeds" fuzz/fuzz_plan >/dev/null 2>&1
bd="$seeds/burst.deck"
./surge-profile "$bd" -o "$seeds/profile/p1.h5" --warmup 1 --repeats 3 >/dev/null 2>&1 &&
  mpiexec --oversubscribe -n 2 ./surge-profile "$bd" -o "$seeds/profile/p2.h5" --warmup 1 --repeats 3 >/dev/null 2>&1 &&
  ./surge-profile "$bd" -o "$seeds/profile/p4.h5" --ranks 4 --warmup 1 --repeats 3 >/dev/null 2>&1 &&
  ./surge-plan "$bd" --profile "$seeds/profile/p4.h5" -o "$seeds/plan/plan.txt" >/dev/null 2>&1 &&
  ./surge-plan "$bd" --profile "$seeds/profile/p4.h5" --amp 1.5 -o "$seeds/plan/plan-amp.txt" >/dev/null 2>&1 ||
  echo "fuzz: warning: the profile and plan seeds were not all written"
# surge-sim files (burst plans at two rank counts; a 3D run), graph files (the examples, VGG-16
# exported by surge-plan) and DeepPool's profiles
dp="$top/tests/data/deeppool"
./surge-sim --deeppool "$dp/A100_vgg.prof" --network a100 --ranks 8,64 --batch 32,256 --eval 4 \
  -o "$seeds/sim/burst.h5" >/dev/null 2>&1 &&
  ./surge-sim --graph "$top/inputs/gpt-2.5b.graph" --tp 2 --pp 4 --dp 2 --micro-batches 4 --micro-batch 1 \
    --cb-ratio 4 --dp-ratio 2 -o "$seeds/sim/3d.h5" >/dev/null 2>&1 &&
  ./surge-plan --deeppool "$dp/A100_vgg.prof" --network a100 --ranks 8 --batch 32 \
    --write-graph "$seeds/graph/vgg.graph" >/dev/null 2>&1 ||
  echo "fuzz: warning: the surge-sim and graph seeds were not all written"
cp "$top/inputs/gpt-2.5b.graph" "$dp/inception-v3.graph" "$seeds/graph/"
cp "$dp"/*.prof "$seeds/deeppool/"
# inputs that once were findings (fuzz/regressions/HARNESS/): every run tries them again
for h in deck sweep checkpoint log plan profile tok sim graph deeppool weights; do
  [ -d "$top/fuzz/regressions/$h" ] && cp "$top/fuzz/regressions/$h"/* "$seeds/$h/"
done
rm -rf "$seeds"/run* "$seeds/tiny.deck" "$bd"

# ---- run: each harness in chunks of at most $chunk seconds and $chunk_runs inputs, a fresh process
# each, which starts from the corpus the last one left. A reader stopped by an input error leaves what
# it had allocated (the programs exit there), about 14 KB per input for the deck parser: a new process
# frees it. Bounded by time alone, a fast machine's chunk outgrew the memory limit (the deck harness:
# 200000 inputs in 30 s, 3.1 GB, stopped as out of memory with an input that passes alone). A finding
# ends its chunk; the next goes on, so a run always lasts its time and reports every finding, each
# under the innermost stack frame that names a source file of Surge. One whose stack passes through
# HDF5's library below that frame is counted apart, as inside HDF5: a crash in the library while it
# parses a crafted file's own metadata, before Surge can check anything (HDF5's to fix; the finding
# is reported and its input kept, but it does not fail the run). The exit status is 1 for findings
# in Surge.
chunk=${SURGE_FUZZ_CHUNK:-30} chunk_runs=${SURGE_FUZZ_CHUNK_RUNS:-100000}
findings=0 hdf5_total=0
mkdir -p fuzz-corpus fuzz-findings
# the harnesses write each input into a directory of their own under TMPDIR (fuzz/fuzz_common.c): one
# per chunk's process, emptied after it (they piled up in /tmp, 100 KB each)
fuzz_tmp=$(mktemp -d) # (under TMPDIR, else /tmp)
trap 'rm -rf "$fuzz_tmp"' EXIT
for h in $harnesses; do
  mkdir -p "fuzz-corpus/$h"
  left=$secs execs=0 found=0 in_hdf5=0 where=""
  : >"fuzz-$h.out"
  while [ "$left" -gt 0 ]; do
    t=$((left < chunk ? left : chunk))
    began=$(date +%s)
    # a single allocation may be large (HDF5 sizes some buffers by what a file says, without touching
    # them: malloc_limit_mb), memory really used may not (rss_limit_mb)
    TMPDIR="$fuzz_tmp" "fuzz/fuzz_$h" -max_total_time="$t" -runs="$chunk_runs" -print_final_stats=1 -timeout=20 \
      -rss_limit_mb=3072 -malloc_limit_mb=16384 -max_len=262144 \
      -artifact_prefix="fuzz-findings/$h-" "fuzz-corpus/$h" "$seeds/$h" >"fuzz-$h.part" 2>&1
    if [ $? != 0 ]; then
      # the report's stack (libFuzzer's lines before it name functions too): its innermost frame in
      # Surge's source, and whether HDF5's library lies inside it
      stack=$(awk '/ERROR: |runtime error:|deadly signal/ { on = 1 } on && /^ *#[0-9]+ / { print }' \
        "fuzz-$h.part")
      # no stack: glibc's "stack smashing detected" aborts where the sanitizers cannot unwind; gdb
      # can, from the input libFuzzer kept (the frames below the smashed one are garbage, the first
      # ones are not)
      unit=$(sed -n 's/.*Test unit written to \(fuzz-findings\/[^ ]*\).*/\1/p' "fuzz-$h.part" | tail -n 1)
      if [ -z "$stack" ] && [ -n "$unit" ] && command -v gdb >/dev/null 2>&1; then
        stack=$(timeout 120 gdb -batch -ex run -ex bt --args "fuzz/fuzz_$h" "$unit" 2>/dev/null | grep -E '^#[0-9]+ ')
        printf 'fuzz: no stack in the report; gdb on %s:\n%s\n' "$unit" "$stack" >>"fuzz-$h.part"
      fi
      frame=$(printf '%s\n' "$stack" | grep -m 1 -o -E "in [A-Za-z_0-9]+ $top/(src|fuzz)/[^ ]+" | sed "s|$top/||")
      if printf '%s\n' "$stack" | awk -v top="$top/" 'index($0, " " top "src/") || index($0, " " top "fuzz/") { exit }
          /libhdf5/ { h = 1 } END { exit !h }'; then
        in_hdf5=$((in_hdf5 + 1))
        where="$where; inside HDF5 under ${frame:-no Surge frame}"
      else
        found=$((found + 1))
        where="$where; ${frame:-no Surge frame}"
      fi
    fi
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "fuzz-$h.part" | tail -n 1)
    [ -n "$n" ] || n=$(grep -o -E '^#[0-9]+' "fuzz-$h.part" | tail -n 1 | tr -d '#') # a finding ends without stats
    rm -rf "${fuzz_tmp:?}"/surge-fuzz-*
    execs=$((execs + ${n:-0}))
    cat "fuzz-$h.part" >>"fuzz-$h.out"
    took=$(($(date +%s) - began))
    left=$((left - (took > 0 ? took : 1)))
  done
  rm -f "fuzz-$h.part"
  corpus=$(ls "fuzz-corpus/$h" | wc -l)
  echo "fuzz $h: $execs executions in ${secs}s ($((execs / (secs > 0 ? secs : 1)))/s), corpus $corpus, ${found} finding(s)" \
    "in Surge, ${in_hdf5} inside HDF5${where}"
  findings=$((findings + found))
  hdf5_total=$((hdf5_total + in_hdf5))
done
[ $findings = 0 ] && [ $hdf5_total = 0 ] || echo "fuzz: the findings' inputs are in $build/fuzz-findings, their reports in $build/fuzz-*.out"
[ $findings = 0 ]
