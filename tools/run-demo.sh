#!/bin/sh
# Quick start, part 1: install dependencies, build, and run the demo job (an MLP trained on
# Fashion-MNIST for a few hundred steps; takes well under a minute on 2 cores).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tools/install-deps.sh"
"$top/tools/build.sh"
build=${SURGE_BUILD:-$top/_build}
cd "$top"
exec "$build/surge-train" inputs/demo.deck -D run.overwrite=true "$@"
