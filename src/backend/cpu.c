/* The fast CPU backend "cpu": OpenBLAS GEMMs (cpu_gemm.c) and vectorisable loops (cpu_*.c). */
#include "backend/backend.h"
#include "backend/cpu_ops.h"
#include "backend/host_mem.h"

/* Every numerical op of backend.h from this backend's function cpu_NAME. */
#define CPU_OP(ret, name, params) .name = cpu_##name,
const backend_t backend_cpu = {
    .name = "cpu",
    HOST_BACKEND_SLOTS,
    .set_threads = cpu_set_threads,
    .open = cpu_open,
    .context = cpu_context,
    BACKEND_MATH_OPS(CPU_OP)
};
