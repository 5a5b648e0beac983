#!/bin/sh
# The cuda backend's linear forwards reach cuBLASLt (issue 32, doc/gpu.md "cuBLASLt epilogues"),
# checked on the build's objects and programs, without a GPU: the objects of linear_fwd (cuda_blas.o)
# and linear_gelu_fwd (cuda_ops.o) call cuda_lt_linear; cuda_lt.o calls cuBLASLt through the table
# that cuda_blas_api.o fills with dlopen and dlsym (it names cublasLtMatmul, its heuristic and
# cublasLtCreate), and nothing in libsurge.a calls cuBLAS or cuBLASLt directly; surge-train and
# test_backend do not load libcublas or libcublasLt at their start (about 150 MiB of resident memory
# a process) but do load CUDA's runtime. Without a CUDA build: one SKIP line.
. "$(dirname "$0")/tap.sh"

[ -n "${SURGE_NVCC_FLAGS:-}" ] || tap_skip_all "the build has no CUDA backend (configure found no usable toolkit)"
command -v nm >/dev/null 2>&1 && command -v readelf >/dev/null 2>&1 || tap_skip_all "nm or readelf not found"
lib="$top_build/libsurge.a"
syms=$(nm -A "$lib" 2>/dev/null)
# calls OBJECT SYMBOL: OBJECT in libsurge.a references SYMBOL (undefined there: a call out)
calls() { printf '%s\n' "$syms" | grep -q -E "(^|:)$1:.* U $2\$"; }

calls cuda_lt.o cuda_blas_api
tap_ok $? "cuda_lt.o calls cuBLASLt through the loaded table (cuda_blas_api)"
api=$(ar p "$lib" cuda_blas_api.o 2>/dev/null | strings)
for s in cublasLtMatmul cublasLtMatmulAlgoGetHeuristic cublasLtCreate cublasGemmEx; do
  printf '%s\n' "$api" | grep -q -x "$s"
  tap_ok $? "cuda_blas_api.o looks up $s"
done
calls cuda_blas_api.o dlopen && calls cuda_blas_api.o dlsym
tap_ok $? "cuda_blas_api.o loads the libraries (dlopen, dlsym)"
direct=$(printf '%s\n' "$syms" | grep -E ' U cublas' | sed 's/.*://' | sort -u | tr '\n' ' ')
[ -z "$direct" ]
tap_ok $? "no object of libsurge.a calls cuBLAS or cuBLASLt directly${direct:+: $direct}"
calls cuda_blas.o cuda_lt_linear
tap_ok $? "linear_fwd's object (cuda_blas.o) calls cuda_lt_linear"
calls cuda_ops.o cuda_lt_linear
tap_ok $? "linear_gelu_fwd's object (cuda_ops.o) calls cuda_lt_linear"
calls cuda.o cuda_lt_open
tap_ok $? "the backend's open (cuda.o) creates the cuBLASLt handle (cuda_lt_open)"
for prog in surge-train tests/test_backend; do
  needed=$(readelf -d "$top_build/$prog" 2>/dev/null | sed -n 's/.*NEEDED.*\[\(.*\)\].*/\1/p' | tr '\n' ' ')
  case " $needed" in *" libcudart.so"*) ;; *) false ;; esac && ! printf '%s' "$needed" | grep -q 'libcublas'
  tap_ok $? "$prog loads CUDA's runtime and not cuBLAS at its start ($(printf '%s' "$needed" | tr ' ' '\n' |
    grep -E 'cuda|cublas|nccl' | tr '\n' ' '))"
done
tap_done
