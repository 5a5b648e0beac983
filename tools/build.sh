#!/bin/sh
# Configure and build Surge out of tree in _build/ (or $SURGE_BUILD). Extra arguments go to configure.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${SURGE_BUILD:-$top/_build}
[ -x "$top/configure" ] || (cd "$top" && ./bootstrap)
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" -q "$@"
make -j"$(nproc)" >/dev/null
echo "build: $build"
