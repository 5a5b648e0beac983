#!/bin/sh
# The zoo's networks of DeepPool's evaluation through the programs (nn/zoo_nets.c): ResNet-18 in
# its small form (stem = small, width_mult 1/16: 4..32 planes; a batch norm after every
# convolution) trained 5 steps on 2 data-parallel ranks ends with the parameters and running
# statistics of 1 rank (per tensor ||w - w_1|| / ||w_1|| <= 1e-5); its graph feeds surge-profile
# and surge-plan as the zoo's others do (a plan for 2 ranks, a row per node). Inception-v3 likewise
# in its small form (width x1/16; its 2-rank run checked on the first step's loss and gradient norm,
# see there), and trained 30 steps on Fashion-MNIST (cpu) with a falling loss.
# The 224-pixel form on Fashion-MNIST's 28 x 28 is refused naming the key's place, the layer and the
# small stem, exit 2.
#
# On the naive backend (its batch-norm sums in double), as tests/test_bn.sh runs Fashion-MNIST: the
# synthetic images are clamped at 0, so about half of their background pixels are exact zeros, and
# ResNet-18's 17 bias-free convolutions and batch norms put equal values on ReLU hinges where a
# layout's float rounding decides masks: on cpu, 2 ranks agree with 1 within 9e-7 after one step but
# drift to 2e-2 (layer2.0.conv_a_bn.bias, absolute 1e-4) after five, while ref agrees within 1e-6.
# The trajectory, not the layout, amplifies rounding: cpu and ref on 1 rank differ by 6e-2 after
# five steps too, and resnet-mini with 4 stages drifts likewise on cpu with batch norm (5e-3) and
# not without (5e-8).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
compare="$top_build/tests/h5_compare"
deck="$top_src/inputs/resnet18-fmnist.deck"
set -- -D model.width_mult=0.0625 -D data.source=synthetic -D data.synthetic_samples=200 \
  -D data.test_samples=20 -D train.global_batch=16 -D run.steps=5 -D run.print_every=5 -D run.eval_every=0 \
  -D run.overwrite=true -D backend.name=ref

train() { # train OUT NP ARGS...: the deck into $tap_tmp/OUT, output in OUT.txt
  out=$1; np=$2; shift 2
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$deck" -D "run.out_dir=$tap_tmp/$out" "$@" >"$tap_tmp/$out.txt" 2>&1
}

train r1 1 "$@"
tap_ok $? "resnet18 (small, width x1/16, ref) 5 steps on 1 rank: $(grep 'total parameters' "$tap_tmp/r1.txt")"
train r2 2 "$@" && res=$("$compare" "$tap_tmp/r2/model.h5" "$tap_tmp/r1/model.h5" 1e-5 2>&1)
tap_ok $? "resnet18 (small): data parallel on 2 ranks = 1 rank, running statistics included: $res"

# profile on 2 ranks (on cpu: ref's times would only be slower), plan for 2
timeout 300 "$mpiexec" -n 2 "$top_build/surge-profile" "$deck" "$@" -D backend.name=cpu -D "run.out_dir=$tap_tmp/prof" \
  -o "$tap_tmp/r18.prof.h5" --warmup 1 --repeats 2 >"$tap_tmp/prof.txt" 2>&1 &&
  "$top_build/surge-plan" "$deck" "$@" -D backend.name=cpu --profile "$tap_tmp/r18.prof.h5" -o "$tap_tmp/r18.plan" \
    >"$tap_tmp/plan.txt" 2>&1
rc=$?
nodes=$(grep -c '^[0-9][0-9]* ' "$tap_tmp/r18.plan" 2>/dev/null)
[ $rc = 0 ] && [ "$nodes" = 68 ]
tap_ok $? "surge-profile and surge-plan on resnet18 (small): a plan of $nodes nodes (68): $(grep -i 'predicted' "$tap_tmp/plan.txt" | head -n 1)"

# Inception-v3 (nn/zoo_inception.c) in its small form, width x1/16 (88,422 parameters; 332 nodes with
# its deck's dropout)
ideck="$top_src/inputs/inception-v3-fmnist.deck"
set -- -D model.width_mult=0.0625 -D run.eval_every=0 -D run.overwrite=true

# trained on Fashion-MNIST (cpu, 1 rank): 30 steps of 32 at a constant lr 0.05, the loss finite
# and falling (the mean of the last 5 steps under 0.85 of the first 5's; measured 2.37 -> 1.44)
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  timeout 300 "$mpiexec" -n 1 "$SURGE_TRAIN" "$ideck" "$@" -D train.global_batch=32 -D run.steps=30 -D run.print_every=1 \
    -D train.warmup_steps=0 -D train.schedule=constant -D train.lr=0.05 -D data.test_samples=100 \
    -D "run.out_dir=$tap_tmp/inc_fm" >"$tap_tmp/inc_fm.txt" 2>&1
  rc=$?
  losses=$(sed -n 's/^step *[0-9]*\/30 | loss \([^ ]*\) .*/\1/p' "$tap_tmp/inc_fm.txt")
  falls=$(echo "$losses" | awk '{ v[NR] = $1; if ($1 != $1 + 0 || $1 == "nan" || $1 == "inf") bad = 1 }
    END { if (NR != 30 || bad) { print "no"; exit } for (i = 1; i <= 5; i++) { a += v[i]; b += v[NR - 5 + i] }
          printf "%s %.3f -> %.3f", (b < 0.85 * a ? "yes" : "no"), a / 5, b / 5 }')
  case $falls in yes*) ok=0 ;; *) ok=1 ;; esac
  [ $rc = 0 ] && [ $ok = 0 ]
  tap_ok $? "inception-v3 (small, width x1/16) on Fashion-MNIST, 30 steps: loss finite and falling (first 5 -> last 5: ${falls#* })"
else
  tap_skip "inception-v3 on Fashion-MNIST: dataset-fashion-mnist is not installed"
fi

# data parallel on 2 ranks against 1 rank (ref, synthetic data, 3 steps). Inception-v3 has no
# residual path: its first layers' gradient passes through 47 batch norms and their ReLUs, and a
# ReLU input within rounding of 0 flips with the summation order: one element in 2 million per
# step (cpu vs ref, one rank: 1 of 16,224 at Mixed_6e.branch7x7dbl_4, 3e-6 from 0) moves every
# gradient below it by 3.6e-3, and after 3 steps the worst batch-norm bias by percents (2 ranks vs
# 1: 2.4 relative; cpu vs ref on one rank alike, 2.3; doc/design.md). So the parameters are not
# compared at 1e-5 as ResNet-18's are. What must hold: the first step's loss (the forward of every
# layer on every sample, batch-norm statistics summed over the ranks) within 1e-6 and its gradient
# norm within 1e-3 (measured 1.7e-8 and 2.5e-4; cpu vs ref 1.6e-7, 6.4e-4).
set -- "$@" -D data.source=synthetic -D data.synthetic_samples=200 -D data.test_samples=20 -D train.global_batch=16 \
  -D run.steps=3 -D run.print_every=1 -D backend.name=ref
rdeck=$deck deck=$ideck
first() { h5vals "$tap_tmp/$1/log.h5" "/metrics/$2" | head -n 1; } # first RUN METRIC: its step-1 value
train i1 1 "$@"
tap_ok $? "inception-v3 (small, width x1/16, ref) 3 steps on 1 rank: $(grep 'total parameters' "$tap_tmp/i1.txt")"
train i2 2 "$@"
rc=$?
res=$("$compare" "$tap_tmp/i2/model.h5" "$tap_tmp/i1/model.h5" 1e-5 2>&1)
l1=$(first i1 loss) l2=$(first i2 loss) g1=$(first i1 grad_norm) g2=$(first i2 grad_norm)
diffs=$(awk -v a="$l1" -v b="$l2" -v c="$g1" -v d="$g2" 'BEGIN { if (a == "" || c == "") { print "none"; exit }
  x = (a - b) / a; y = (c - d) / c; printf "%.1e %.1e", x < 0 ? -x : x, y < 0 ? -y : y }')
ok=$(echo "$diffs" | awk '{ print ($1 != "none" && $1 <= 1e-6 && $2 <= 1e-3) ? 0 : 1 }')
if ! command -v h5dump >/dev/null 2>&1; then
  tap_skip "inception-v3 (small): data parallel on 2 ranks vs 1 rank: h5dump is not installed"
else
  [ $rc = 0 ] && [ "$ok" = 0 ]
  tap_ok $? "inception-v3 (small): data parallel on 2 ranks vs 1 rank, step 1: loss and gradient norm differ by $diffs (<= 1e-6, 1e-3); parameters after 3 steps: $res"
fi
deck=$rdeck

# its graph through surge-profile (2 ranks, cpu) and surge-plan for 2 ranks: a row per node
timeout 300 "$mpiexec" -n 2 "$top_build/surge-profile" "$ideck" "$@" -D backend.name=cpu -D "run.out_dir=$tap_tmp/iprof" \
  -o "$tap_tmp/inc.prof.h5" --warmup 1 --repeats 2 >"$tap_tmp/iprof.txt" 2>&1 &&
  "$top_build/surge-plan" "$ideck" "$@" -D backend.name=cpu --profile "$tap_tmp/inc.prof.h5" -o "$tap_tmp/inc.plan" \
    >"$tap_tmp/iplan.txt" 2>&1
rc=$?
nodes=$(grep -c '^[0-9][0-9]* ' "$tap_tmp/inc.plan" 2>/dev/null)
[ $rc = 0 ] && [ "$nodes" = 332 ]
tap_ok $? "surge-profile and surge-plan on inception-v3 (small, its deck's dropout): a plan of $nodes nodes (332): $(grep -i 'predicted' "$tap_tmp/iplan.txt" | head -n 1)"

# the 224-pixel form does not fit 28 x 28: the place of the key (here the -D), the layer, the hint; exit 2
timeout 60 "$SURGE_TRAIN" "$deck" -D model.zoo=vgg16 -D model.stem=imagenet -D "run.out_dir=$tap_tmp/bad" \
  >"$tap_tmp/bad.txt" 2>&1
rc=$?
grep -q "model.zoo=vgg16: \[model\] zoo = vgg16: .*pool5.*(hint: \[model\] stem = small" "$tap_tmp/bad.txt"
found=$?
[ $rc = 2 ] && [ $found = 0 ]
tap_ok $? "vgg16 with stem = imagenet on 28 x 28: exit $rc, $(grep "error" "$tap_tmp/bad.txt" | head -n 1)"

tap_done
