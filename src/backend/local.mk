libsurge_a_SOURCES += \
  src/backend/backend.c src/backend/backend.h src/backend/backend_open.h \
  src/backend/host_mem.c src/backend/host_mem.h src/backend/options.c src/backend/options.h \
  src/backend/ref.c src/backend/ref_fused.c src/backend/ref_fused.h src/backend/ref_attention.c \
  src/backend/cpu_attention.c \
  src/backend/cpu.c src/backend/cpu_ops.h src/backend/cpu_gemm.c src/backend/cpu_linear.c src/backend/cpu_elementwise.c \
  src/backend/cpu_conv.c src/backend/cpu_conv_batch.c src/backend/cpu_conv_direct.c src/backend/cpu_direct.h \
  src/backend/cpu_seq.c src/backend/cpu_norm.c src/backend/cpu_optim.c src/backend/cpu_fpmode.c \
  src/backend/cpu_simd.c src/backend/cpu_simd.h src/backend/cpu_simd_tables.h src/backend/cpu_kern_w16.c \
  src/backend/cpu_kern_w8.c src/backend/cpu_direct_kern.h src/backend/cpu_gemm_kern.h src/backend/cpu_linear_kern.h src/backend/cpu_pool_kern.h \
  src/backend/cuda_elem.h src/backend/cuda_rows.h src/backend/cuda_attention_tiles.h

# The CUDA backend (doc/gpu.md): host code in C (cuda*.c, with the toolkit's headers), kernels in
# CUDA C++ (cuda_kern_*.cu, compiled by nvcc for NVCC_ARCH). Without the toolkit, cuda_absent.c
# keeps the name and explains at open.
if HAVE_CUDA
AM_CPPFLAGS += $(CUDA_CFLAGS)
SURGE_LIBS += $(CUDA_LIBS) -lstdc++
cuda_kernel_sources = src/backend/cuda_kern_elem.cu src/backend/cuda_kern_reduce.cu src/backend/cuda_kern_rows.cu \
  src/backend/cuda_kern_norm.cu src/backend/cuda_kern_attention.cu
libsurge_a_SOURCES += src/backend/cuda.c src/backend/cuda_impl.h src/backend/cuda_blas.c src/backend/cuda_conv.c \
  src/backend/cuda_ops.c src/backend/cuda_attention.c src/backend/cuda_kern.cuh $(cuda_kernel_sources)
SUFFIXES = .cu
.cu.o:
	$(AM_V_CC)$(NVCC) $(NVCC_ARCH) -O3 -std=c++17 -Xcompiler -Wall -I$(top_srcdir)/src $(CUDA_CFLAGS) -c -o $@ $<
# nvcc objects have no automatic dependencies: every kernel file depends on the kernel headers
$(cuda_kernel_sources:.cu=.$(OBJEXT)): $(top_srcdir)/src/backend/cuda_kern.cuh $(top_srcdir)/src/backend/cuda_elem.h \
  $(top_srcdir)/src/backend/cuda_rows.h $(top_srcdir)/src/backend/cuda_attention_tiles.h \
  $(top_srcdir)/src/backend/cuda_impl.h $(top_srcdir)/src/backend/backend.h
else
libsurge_a_SOURCES += src/backend/cuda_absent.c
endif

check_PROGRAMS += tests/test_backend
tests_test_backend_SOURCES = tests/test_backend.c tests/rel_diff.h
tests_test_backend_LDADD = $(SURGE_LIBS)
TESTS += tests/test_backend

# The CUDA kernels' per-element arithmetic, tested on the host (every build: it needs no GPU).
check_PROGRAMS += tests/test_cuda_elem
tests_test_cuda_elem_SOURCES = tests/test_cuda_elem.c tests/rel_diff.h
tests_test_cuda_elem_LDADD = $(SURGE_LIBS)
TESTS += tests/test_cuda_elem

# The CUDA row kernels' phases (src/backend/cuda_rows.h) over each kernel's whole grid on the host
# (every build: it needs no GPU).
check_PROGRAMS += tests/test_cuda_rows
tests_test_cuda_rows_SOURCES = tests/test_cuda_rows.c tests/kernel_harness.h tests/rel_diff.h
tests_test_cuda_rows_LDADD = $(SURGE_LIBS)
TESTS += tests/test_cuda_rows

# The fused attention's CUDA kernels (src/backend/cuda_attention_tiles.h) over each kernel's whole
# grid on the host (every build: it needs no GPU).
check_PROGRAMS += tests/test_cuda_attention
tests_test_cuda_attention_SOURCES = tests/test_cuda_attention.c tests/kernel_harness.h tests/rel_diff.h
tests_test_cuda_attention_LDADD = $(SURGE_LIBS)
TESTS += tests/test_cuda_attention
