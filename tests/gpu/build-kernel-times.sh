#!/bin/sh
# tests/gpu/build-kernel-times.sh BUILD: compile tests/gpu/kernel_times.c (a CUPTI injection library
# that tells where a CUDA program's GPU time goes) into BUILD/tests/gpu/libkernel_times.so, with the
# toolkit under $CUDA_HOME (default /usr/local/cuda). Exit 1 when the toolkit has no CUPTI.
set -eu
[ $# = 1 ] || { echo "usage: tests/gpu/build-kernel-times.sh BUILD" >&2; exit 2; }
src=$(cd "$(dirname "$0")/../.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
lib=""
for d in "$cuda/lib64" "$cuda/lib" "$cuda/extras/CUPTI/lib64"; do
  [ -e "$d/libcupti.so" ] && lib=$d && break
done
[ -n "$lib" ] && [ -f "$cuda/include/cupti.h" ] || { echo "build-kernel-times: no CUPTI under $cuda" >&2; exit 1; }
mkdir -p "$1/tests/gpu"
${CC:-cc} -O2 -Wall -shared -fPIC -I"$cuda/include" "$src/tests/gpu/kernel_times.c" -o "$1/tests/gpu/libkernel_times.so" \
  -L"$lib" -Wl,-rpath,"$lib" -lcupti -lstdc++
