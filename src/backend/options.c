/* The deck's [backend] section: where the arithmetic runs (backend/backend.h; doc/gpu.md). */
#include "backend/options.h"

#define CFG_OPTS backend_deck_t
// clang-format off: the table reads best one key per row
static const cfg_key_t rows[] = {
    CFG_ENUM_KEY("backend", "name", name, "cpu", CFG_VALUES("cpu", "ref", "cuda"),
                 "cpu: OpenBLAS; ref: naive reference (tests only); cuda: an NVIDIA GPU per rank (cuBLAS, kernels, "
                 "NCCL; doc/gpu.md)"),
    CFG_INT_KEY("backend", "threads", threads, "1", 1, 1024,
                "threads per rank: OpenBLAS's, and in bf16 the cpu's own matrix products (the same bits on any "
                "number); under mpiexec give the rank the cores: --bind-to none, or --map-by slot:PE=N"),
    CFG_INT_KEY("backend", "device", device, "-1", -1, 1023,
                "cuda: the GPU of this rank; -1: its index among its job's ranks on the node, modulo the GPUs there"),
    CFG_ENUM_KEY("backend", "precision", precision, "fp32", CFG_VALUES("fp32", "bf16"),
                 "matrix products in float32, or bf16 (operands rounded to bfloat16, float32 sums, and GELU's input "
                 "rounded so on cpu and ref; parameters, "
                 "gradients and optimizer state stay float32, gradients are reduced in float32, activations as "
                 "backend.activations says); every "
                 "backend: cuda on cuBLAS's bf16 compute type and tensor cores, cpu in bfloat16 pairs where the CPU "
                 "has AVX-512 BF16 (about 1.8x its float GEMM; elsewhere, and in its direct convolutions, the "
                 "operands are rounded and multiplied in float: no faster), ref as their truth"),
    CFG_BOOL_KEY("backend", "tf32", tf32, "false",
                 "cuda: float32 products may use TF32 tensor cores (false: true float32, as the equivalence tests "
                 "need)"),
    CFG_BOOL_KEY("backend", "flush_denormals", flush_denormals, "true",
                 "cpu: float values below 1.2e-38 count as zero (the CPU's flush-to-zero and denormals-are-zero "
                 "modes, on the rank's own thread): the optimizer's moments of idle units decay into that range, "
                 "where every operation takes a slow path; false: gradual underflow, as IEEE and the ref backend"),
    CFG_ENUM_KEY("backend", "simd", simd, "auto", CFG_VALUES("auto", "avx512", "avx2", "none"),
                 "cpu: the vector width of the hand-written kernels (direct convolutions, the 2x2 max-pool, the "
                 "unpacked linear forward); auto: the widest this CPU executes; avx512 (16 floats) or avx2 (8, with FMA) "
                 "force one, an error where the CPU lacks it; none: convolutions lowered to OpenBLAS GEMMs, the general "
                 "loops elsewhere"),
    CFG_ENUM_KEY("backend", "gemm", gemm, "auto", CFG_VALUES("auto", "blas"),
                 "cpu: whose SGEMM runs the matrix products; auto: the backend's own packed AVX-512 kernel where it "
                 "beats OpenBLAS (simd = avx512 or auto on an AVX-512 CPU, threads = 1, every dimension >= 16), "
                 "OpenBLAS elsewhere; blas: OpenBLAS always"),
    CFG_ENUM_KEY("backend", "device_comm", device_comm, "auto", CFG_VALUES("auto", "nccl", "staged"),
                 "cuda: how GPU buffers travel between ranks; nccl: NCCL collectives and grouped send/receive; "
                 "staged: copied through host memory and sent with MPI; auto: NCCL unless ranks of a group share a "
                 "GPU (which NCCL refuses)"),
    CFG_ENUM_KEY("backend", "epilogues", epilogues, "auto", CFG_VALUES("auto", "bias", "off"),
                 "cuda: a linear layer's bias, and the GELU after it, applied inside the matrix product (cuBLASLt "
                 "epilogues) rather than by kernels of their own; auto: bias and bias + GELU wherever cuBLASLt has "
                 "an algorithm for the shape and the operands' alignment, the product and the kernels elsewhere; "
                 "bias: the bias only, GELU as a kernel; off: never; accepted by the host backends, where it changes "
                 "nothing (doc/gpu.md)"),
    CFG_ENUM_KEY("backend", "attention_kernels", attention_kernels, "auto", CFG_VALUES("auto", "wmma", "wmma32"),
                 "cuda, precision = bf16: the fused attention's tensor-core kernels; auto: their tiles in registers "
                 "(mma.sync) at head sizes 16, 32, 64 (and the forward's at 128), the WMMA kernels elsewhere, in "
                 "64-row tiles where they fit the device (head sizes up to 160 on an H100 or H200), 32 above; wmma: "
                 "the WMMA kernels everywhere; wmma32: the WMMA kernels in 32-row tiles (the form of 2026-12-04); "
                 "fp32 runs its own kernels whatever it says; accepted by the host backends, where it changes "
                 "nothing (doc/gpu.md)"),
    CFG_ENUM_KEY("backend", "activations", activations, "auto", CFG_VALUES("auto", "float32"),
                 "precision = bf16: auto holds an activation in bfloat16 where every layer that reads it rounds it "
                 "to bfloat16 anyway (the input of a linear layer, of the tied output projection, of attention or "
                 "of a GELU: a layer norm's, a GELU's, a query-key-value product's, an attention's or the linear "
                 "output a GELU reads), on cpu and ref: the same results "
                 "in half its memory (doc/design.md); float32: every activation in float32; fp32 and cuda hold them "
                 "in float32 whatever it says"),
};
// clang-format on

const cfg_part_t backend_deck_options = {
    .name = "backend", .keys = rows, .nkeys = CFG_NROWS(rows), .size = sizeof(backend_deck_t)};
