libsurge_a_SOURCES += \
  src/backend/backend.c src/backend/backend.h src/backend/backend_open.h \
  src/backend/host_mem.c src/backend/host_mem.h src/backend/options.c src/backend/options.h \
  src/backend/ref.c src/backend/ref_fused.c src/backend/ref_fused.h src/backend/ref_attention.c \
  src/backend/cpu_attention.c \
  src/backend/cpu.c src/backend/cpu_ops.h src/backend/cpu_gemm.c src/backend/cpu_linear.c src/backend/cpu_elementwise.c \
  src/backend/cpu_conv.c src/backend/cpu_conv_batch.c src/backend/cpu_conv_direct.c src/backend/cpu_bf16.c src/backend/cpu_direct.h \
  src/backend/cpu_team.c src/backend/cpu_team.h \
  src/backend/cpu_seq.c src/backend/cpu_norm.c src/backend/cpu_optim.c src/backend/cpu_fpmode.c \
  src/backend/cpu_simd.c src/backend/cpu_simd.h src/backend/cpu_simd_tables.h src/backend/cpu_kern_w16.c \
  src/backend/cpu_kern_w8.c src/backend/cpu_kern_bf16.c src/backend/cpu_direct_kern.h src/backend/cpu_gemm_kern.h src/backend/cpu_linear_kern.h src/backend/cpu_pool_kern.h src/backend/cpu_rows_kern.h \
  src/backend/cuda_elem.h src/backend/cuda_rows.h src/backend/cuda_cols.h src/backend/cuda_ln_bwd.h \
  src/backend/cuda_embed.h src/backend/cuda_attention_tiles.h src/backend/cuda_attention_mma.h src/backend/cuda_attention_rf.h \
  src/backend/cuda_lt_rule.h src/backend/step_rules.h src/backend/orth_rules.h src/backend/tn_parts.h \
  src/backend/adamw_coefs.h

# The CUDA backend (doc/gpu.md): host code in C (cuda*.c, with the toolkit's headers), kernels in
# CUDA C++ (cuda_kern_*.cu, compiled by nvcc for NVCC_ARCH). Without the toolkit, cuda_absent.c
# keeps the name and explains at open.
if HAVE_CUDA
# nvcc's flags for the kernel files but the architecture (NVCC_ARCH): the .cu rule below and
# tests/test_cuda_spills.sh (through the tests' environment, Makefile.am) use the same ones; empty
# without the toolkit, and the spill test then skips.
NVCC_FLAGS = -O3 -std=c++17 -Xcompiler -Wall -I$(top_srcdir)/src $(CUDA_CFLAGS)
AM_CPPFLAGS += $(CUDA_CFLAGS)
SURGE_LIBS += $(CUDA_LIBS) -lstdc++
cuda_kernel_sources = src/backend/cuda_kern_elem.cu src/backend/cuda_kern_reduce.cu src/backend/cuda_kern_rows.cu \
  src/backend/cuda_kern_norm.cu src/backend/cuda_kern_cols.cu src/backend/cuda_kern_embed.cu \
  src/backend/cuda_kern_attention.cu
libsurge_a_SOURCES += src/backend/cuda.c src/backend/cuda_impl.h src/backend/cuda_event.h \
  src/backend/cuda_device_calls.h src/backend/cuda_blas.c \
  src/backend/cuda_lt.c src/backend/cuda_blas_api.c src/backend/cuda_blas_api.h \
  src/backend/cuda_conv.c src/backend/cuda_graph.c src/backend/cuda_marks.c \
  src/backend/cuda_ops.c src/backend/cuda_attention.c src/backend/cuda_kern.cuh $(cuda_kernel_sources)
SUFFIXES = .cu
# nvcc writes each kernel object's dependencies beside it (-MD -MF: every header it includes, directly or not; -MP: an
# empty rule for each, so a header removed breaks nothing), which make reads on the next build: a change to any of them
# rebuilds the objects that include it (a hand-kept list of the headers had missed one). A tree built before these
# lines has no such files: remove its src/backend/cuda_kern_*.o once.
.cu.o:
	$(AM_V_CC)$(NVCC) $(NVCC_ARCH) $(NVCC_FLAGS) -MD -MP -MF $*.d -c -o $@ $<
-include $(cuda_kernel_sources:.cu=.d)
CLEANFILES += $(cuda_kernel_sources:.cu=.d)
# The recorded pieces' logic (cuda_graph.c, [multiplex] graphs) over a faked CUDA runtime, on the
# host: it needs the toolkit's headers, not a GPU, and links no CUDA library.
check_PROGRAMS += tests/test_cuda_graph
tests_test_cuda_graph_SOURCES = tests/test_cuda_graph.c src/backend/cuda_graph.c tests/cuda_host_fakes.c tests/child.c \
  tests/cuda_fake_error.c tests/cuda_fake_error.h
tests_test_cuda_graph_LDADD = -lpthread
TESTS += tests/test_cuda_graph
# cuBLAS and cuBLASLt loaded when the backend opens (cuda_blas_api.c): the load and every entry
# point, on the host (it needs the toolkit's libraries, not a GPU).
check_PROGRAMS += tests/test_cuda_blas_api
tests_test_cuda_blas_api_SOURCES = tests/test_cuda_blas_api.c src/backend/cuda_blas_api.c
tests_test_cuda_blas_api_LDADD = -ldl -lpthread
TESTS += tests/test_cuda_blas_api
# The GEMMs (cuda_blas.c) over a cuBLAS of host loops, on the host likewise.
check_PROGRAMS += tests/test_cuda_gemm
tests_test_cuda_gemm_SOURCES = tests/test_cuda_gemm.c src/backend/cuda_blas.c
tests_test_cuda_gemm_LDADD = libsurge.a -lm
TESTS += tests/test_cuda_gemm
# The timing marks (cuda_marks.c) over a faked CUDA runtime, on the host likewise.
check_PROGRAMS += tests/test_cuda_marks
tests_test_cuda_marks_SOURCES = tests/test_cuda_marks.c src/backend/cuda_marks.c tests/cuda_host_fakes.c tests/child.c \
  tests/cuda_fake_error.c tests/cuda_fake_error.h
TESTS += tests/test_cuda_marks
else
libsurge_a_SOURCES += src/backend/cuda_absent.c
endif

check_PROGRAMS += tests/test_backend
tests_test_backend_SOURCES = tests/test_backend.c tests/rel_diff.h
tests_test_backend_LDADD = $(SURGE_LIBS)
TESTS += tests/test_backend
check_PROGRAMS += tests/test_bf16
tests_test_bf16_SOURCES = tests/test_bf16.c tests/rel_diff.h
tests_test_bf16_LDADD = $(SURGE_LIBS)
TESTS += tests/test_bf16
# The own packed SGEMM's order of sums, bit for bit, at every width.
check_PROGRAMS += tests/test_gemm_order
tests_test_gemm_order_SOURCES = tests/test_gemm_order.c
tests_test_gemm_order_LDADD = $(SURGE_LIBS)
TESTS += tests/test_gemm_order
# The cpu backend's team of threads (cpu_team.c alone).
check_PROGRAMS += tests/test_cpu_team
tests_test_cpu_team_SOURCES = tests/test_cpu_team.c src/backend/cpu_team.c
tests_test_cpu_team_LDADD = -lpthread
TESTS += tests/test_cpu_team

# The cuda backend's rule for cuBLASLt's epilogues before the heuristic (every build: it needs no GPU).
check_PROGRAMS += tests/test_cuda_lt_rule
tests_test_cuda_lt_rule_SOURCES = tests/test_cuda_lt_rule.c
tests_test_cuda_lt_rule_LDADD = $(SURGE_LIBS)
TESTS += tests/test_cuda_lt_rule

# The CUDA kernels' per-element arithmetic, tested on the host (every build: it needs no GPU).
check_PROGRAMS += tests/test_cuda_elem
tests_test_cuda_elem_SOURCES = tests/test_cuda_elem.c tests/rel_diff.h
tests_test_cuda_elem_LDADD = $(SURGE_LIBS)
TESTS += tests/test_cuda_elem

# The CUDA kernels of (row, lane) and (block, thread) over each kernel's whole grid on the host, every
# store recorded (tests/cuda_harness.h; every build: they need no GPU): the row kernels and layer
# norm's one-kernel backward (cuda_rows.h, cuda_ln_bwd.h), the column sums (cuda_cols.h), the
# embedding gradient by sorted positions (cuda_embed.h, bitwise against ref), the fused causal
# attention (cuda_attention_tiles.h).
cuda_harness_tests = tests/test_cuda_rows tests/test_cuda_cols tests/test_cuda_embed tests/test_cuda_attention
check_PROGRAMS += $(cuda_harness_tests)
TESTS += $(cuda_harness_tests)
cuda_harness_sources = tests/cuda_harness.h tests/rel_diff.h
tests_test_cuda_rows_SOURCES = tests/test_cuda_rows.c $(cuda_harness_sources)
tests_test_cuda_cols_SOURCES = tests/test_cuda_cols.c $(cuda_harness_sources)
tests_test_cuda_embed_SOURCES = tests/test_cuda_embed.c $(cuda_harness_sources)
tests_test_cuda_attention_SOURCES = tests/test_cuda_attention.c $(cuda_harness_sources)
tests_test_cuda_rows_LDADD = $(SURGE_LIBS)
tests_test_cuda_cols_LDADD = $(SURGE_LIBS)
tests_test_cuda_embed_LDADD = $(SURGE_LIBS)
tests_test_cuda_attention_LDADD = $(SURGE_LIBS)

# ptxas's register spills in every kernel file, for sm_90 (every build with nvcc: it needs no GPU).
dist_check_SCRIPTS += tests/test_cuda_spills.sh
TESTS += tests/test_cuda_spills.sh

# The linear forwards' objects reach cuBLASLt and the programs load it (every build with CUDA: it
# needs no GPU).
dist_check_SCRIPTS += tests/test_cuda_link.sh
TESTS += tests/test_cuda_link.sh
