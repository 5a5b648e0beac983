#!/bin/sh
# The cuda backend's linear forwards reach cuBLASLt (issue 32, doc/gpu.md "cuBLASLt epilogues"),
# checked on the build's objects and programs, without a GPU: libsurge.a's cuda_lt.o calls
# cublasLtMatmul and its heuristic, the objects of linear_fwd (cuda_blas.o) and linear_gelu_fwd
# (cuda_ops.o) call cuda_lt_linear, and surge-train and test_backend load libcublasLt (configure
# links it where it links cuBLAS). Without a CUDA build: one SKIP line.
. "$(dirname "$0")/tap.sh"

[ -n "${SURGE_NVCC_FLAGS:-}" ] || tap_skip_all "the build has no CUDA backend (configure found no usable toolkit)"
command -v nm >/dev/null 2>&1 && command -v readelf >/dev/null 2>&1 || tap_skip_all "nm or readelf not found"
lib="$top_build/libsurge.a"
syms=$(nm -A "$lib" 2>/dev/null)
# calls OBJECT SYMBOL: OBJECT in libsurge.a references SYMBOL (undefined there: a call out)
calls() { printf '%s\n' "$syms" | grep -q -E "(^|:)$1:.* U $2\$"; }

for s in cublasLtMatmul cublasLtMatmulAlgoGetHeuristic cublasLtCreate; do
  calls cuda_lt.o "$s"
  tap_ok $? "cuda_lt.o calls $s"
done
calls cuda_blas.o cuda_lt_linear
tap_ok $? "linear_fwd's object (cuda_blas.o) calls cuda_lt_linear"
calls cuda_ops.o cuda_lt_linear
tap_ok $? "linear_gelu_fwd's object (cuda_ops.o) calls cuda_lt_linear"
calls cuda.o cuda_lt_open
tap_ok $? "the backend's open (cuda.o) creates the cuBLASLt handle (cuda_lt_open)"
for prog in surge-train tests/test_backend; do
  readelf -d "$top_build/$prog" 2>/dev/null | grep NEEDED | grep -q 'libcublasLt\.so'
  tap_ok $? "$prog loads libcublasLt ($(readelf -d "$top_build/$prog" 2>/dev/null | sed -n 's/.*\[\(libcublas[^]]*\)\].*/\1/p' | tr '\n' ' '))"
done
tap_done
