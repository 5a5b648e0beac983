#!/bin/sh
# The zoo's networks of DeepPool's evaluation through the programs (nn/zoo_nets.c): ResNet-18 in
# its small form (stem = small, width_mult 1/16: 4..32 planes; a batch norm after every
# convolution) trained 5 steps on 2 data-parallel ranks ends with the parameters and running
# statistics of 1 rank (per tensor ||w - w_1|| / ||w_1|| <= 1e-5); its graph feeds surge-profile
# and surge-plan as the zoo's others do (a plan for 2 ranks, a row per node); the 224-pixel form on
# Fashion-MNIST's 28 x 28 is refused naming the key's place, the layer and the small stem, exit 2.
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

# the 224-pixel form does not fit 28 x 28: the place of the key (here the -D), the layer, the hint; exit 2
timeout 60 "$SURGE_TRAIN" "$deck" -D model.zoo=vgg16 -D model.stem=imagenet -D "run.out_dir=$tap_tmp/bad" \
  >"$tap_tmp/bad.txt" 2>&1
rc=$?
grep -q "model.zoo=vgg16: \[model\] zoo = vgg16: .*pool5.*(hint: \[model\] stem = small" "$tap_tmp/bad.txt"
found=$?
[ $rc = 2 ] && [ $found = 0 ]
tap_ok $? "vgg16 with stem = imagenet on 28 x 28: exit $rc, $(grep "error" "$tap_tmp/bad.txt" | head -n 1)"

tap_done
