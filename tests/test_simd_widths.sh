#!/bin/sh
# The cpu backend's kernel widths (backend.simd = none, avx2, avx512) train every zoo model alike:
# 10 steps of each at every width this CPU executes end with the parameters of the ref backend's
# run (the naive truth) and of each other, per tensor ||w_a - w_b|| / ||w_b|| <= 1e-5 (the bound
# of the cpu-vs-ref and the layouts' equivalence tests; measured: at most 4.4e-7; the widths alike
# to 0 where the products are OpenBLAS's at both, to 4.1e-7 for gpt, whose products take the own
# SGEMM at avx512 only). A width the CPU lacks is skipped with
# surge-train's reason, which must be the clear one (exit 2, the CPU's widest named).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
. "$top_src/tests/zoo_models.sh"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
compare="$top_build/tests/h5_compare"

# mlp-wide: the mlp at its deck's width (784-512-512-10), whose layers take the unpacked linear
# forward at the kernel widths (the test size's 64 and 32 outputs are too few for it)
for model in mlp mlp-wide vgg resnet gpt; do
  if [ $model = mlp-wide ]; then
    deck=mlp-fmnist.deck; args="-D data.train_samples=400"; extra=""
  else
    zoo_model $model 10
  fi
  # shellcheck disable=SC2086
  zoo_run "$model-ref" "$deck" $args -D backend.name=ref
  tap_ok $? "$model on the ref backend"
  done_widths=""
  for w in none avx2 avx512; do
    # shellcheck disable=SC2086
    zoo_run "$model-$w" "$deck" $args -D backend.simd=$w
    rc=$?
    if [ $rc = 2 ] && grep -q "simd = $w, but this CPU runs at most" "$tap_tmp/$model-$w.txt"; then
      tap_skip "$model at simd = $w: $(grep -o "simd = $w, but this CPU.*" "$tap_tmp/$model-$w.txt" | head -n 1)"
      continue
    fi
    if [ $rc != 0 ]; then
      tap_ok 1 "$model at simd = $w: training failed (exit $rc): $(tail -n 3 "$tap_tmp/$model-$w.txt")"
      continue
    fi
    for other in ref $done_widths; do
      # shellcheck disable=SC2086
      res=$("$compare" "$tap_tmp/$model-$w/model.h5" "$tap_tmp/$model-$other/model.h5" 1e-5 $extra 2>&1)
      tap_ok $? "$model at simd = $w = $other: $res"
    done
    done_widths="$done_widths $w"
  done
done

tap_done
