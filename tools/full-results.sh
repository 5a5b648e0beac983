#!/bin/sh
# Full-length training results (not part of make check): trains the example decks to the lengths
# the foundation issue names and prints each run's final metric beside its target.
#   tools/full-results.sh [mlp|vgg|gpt|resnet-bn|resnet18|vgg16-bn ...]   (default: all six; ~35-50 minutes on 2 cores)
# Results go to runs/full-*/ and the summary to stdout; doc/results.md records a measured run.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${SURGE_BUILD:-$top/_build}
"$top/tools/build.sh" >/dev/null
cd "$top"
which=${*:-mlp vgg gpt resnet-bn resnet18 vgg16-bn}
summary=""
for m in $which; do
  case $m in
    mlp) deck=inputs/mlp-fmnist.deck; metric="final test accuracy"; target=">= 84%" ;;
    vgg) deck=inputs/vgg-mini-fmnist.deck; metric="final test accuracy"; target=">= 82%" ;;
    gpt) deck=inputs/gpt-fortunes.deck; metric="final validation loss"; target="<= 2.65 nats/byte" ;;
    resnet-bn) deck=inputs/resnet-mini-bn-fmnist.deck; metric="final test accuracy"; target=">= 90%" ;;
    resnet18) deck=inputs/resnet18-fmnist.deck; metric="final test accuracy"; target=">= 91%" ;;
    vgg16-bn) deck=inputs/vgg16-bn-fmnist.deck; metric="final test accuracy"; target=">= 89%" ;;
    *) echo "unknown model $m (mlp, vgg, gpt, resnet-bn, resnet18, vgg16-bn)" >&2; exit 2 ;;
  esac
  log=$(mktemp)
  start=$(date +%s)
  "$build/surge-train" "$deck" -D "run.out_dir=runs/full-$m" -D run.overwrite=true | tee "$log"
  secs=$(( $(date +%s) - start ))
  got=$(grep "^$metric" "$log" | tail -n 1)
  summary="$summary$m: $got (target $target), ${secs}s wall\n"
  rm -f "$log"
done
printf '\n== full-length results\n%b' "$summary"
