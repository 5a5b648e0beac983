#!/bin/sh
# precision = bf16 on the cpu backend trains as float32 does: a small gpt on the fortunes text, 200
# steps, from the same seed in fp32 and in bf16. The bf16 run says so, ends with its validation loss
# within 2% of the fp32 run's (0.03% when written), and with parameters of its own (the bf16 products
# ran: the comparison can fail).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -d /usr/share/games/fortunes ] || tap_skip_all "the fortunes text (Debian package fortunes) is not installed"
"$top_build/tests/test_bf16" | grep -q "^ok [0-9]* # SKIP the cpu backend's bf16" &&
  tap_skip_all "the cpu backend cannot run bf16 here (tests/test_bf16 says why)"
for p in fp32 bf16; do
  "$SURGE_TRAIN" "$top_src/inputs/gpt-fortunes.deck" -D run.steps=200 -D run.print_every=50 -D run.eval_every=0 \
    -D model.gpt_layers=2 -D model.gpt_width=128 -D model.gpt_context=64 -D data.test_samples=256 \
    -D train.lr=1e-3 -D train.min_lr=1e-4 -D train.warmup_steps=10 -D backend.precision=$p \
    -D "run.out_dir=$tap_tmp/$p" >"$tap_tmp/$p.txt" 2>&1
  tap_ok $? "gpt trains on fortunes in $p"
done
grep -q "^data .*backend cpu (1 thread per rank, bf16 products)" "$tap_tmp/bf16.txt" &&
  ! grep -q "bf16 products" "$tap_tmp/fp32.txt"
tap_ok $? "the bf16 run says it multiplies in bf16, the fp32 run does not"
loss() { sed -n 's/^final validation loss \([0-9.]*\) .*/\1/p' "$tap_tmp/$1.txt"; }
f=$(loss fp32)
b=$(loss bf16)
awk -v f="${f:-0}" -v b="${b:-99}" 'BEGIN{exit !(f > 0 && (b - f) / f < 0.02 && (f - b) / f < 0.02)}'
tap_ok $? "validation loss after 200 steps: bf16 ${b:-?} within 2% of fp32 ${f:-?}"
"$top_build/tests/h5_compare" "$tap_tmp/bf16/model.h5" "$tap_tmp/fp32/model.h5" 1e-5 >"$tap_tmp/cmp.txt" 2>&1
[ $? = 1 ]
tap_ok $? "the bf16 run's parameters are not the fp32 run's: $(cat "$tap_tmp/cmp.txt")"
tap_done
