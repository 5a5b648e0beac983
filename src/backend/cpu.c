/* The fast CPU backend "cpu": OpenBLAS GEMMs (cpu_gemm.c) and vectorisable loops (cpu_*.c). */
#include "backend/backend.h"
#include "backend/cpu_ops.h"
#include "backend/host_mem.h"

/* Every numerical op of backend.h from this backend's function cpu_NAME. */
#define CPU_OP(ret, name, params) .name = cpu_##name,
const backend_t backend_cpu = {
    .name = "cpu",
    .host_memory = 1,
    .close = host_close,
    .synchronize = host_synchronize,
    .context = host_context,
    .set_priority = host_set_priority,
    .alloc = host_mem_alloc,
    .free = host_mem_free,
    .upload = host_mem_copy,
    .download = host_mem_copy,
    .copy = host_mem_copy,
    .device_used = host_mem_device_used,
    .set_threads = cpu_set_threads,
    .open = cpu_open,
    BACKEND_MATH_OPS(CPU_OP)
};
