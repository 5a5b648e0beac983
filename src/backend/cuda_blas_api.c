/* cuBLAS and cuBLASLt loaded on demand (cuda_blas_api.h). */
#define SURGE_CUDA_BLAS_LOADER
#include "backend/cuda_blas_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "surge_build_config.h"

cuda_blas_api_t cuda_blas_api;

#define SONAME_OF(lib, major) lib ".so." #major
#define SONAME(lib, major) SONAME_OF(lib, major)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[512]; /* empty: loaded */

/* dlopen the soname, else the configured toolkit's file; NULL with the loader's words in failure. */
static void *open_lib(const char *soname) {
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
#ifdef SURGE_CUDA_LIBDIR
  if (!h) {
    char path[768];
    snprintf(path, sizeof path, "%s/%s", SURGE_CUDA_LIBDIR, soname);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
#endif
  if (!h) snprintf(failure, sizeof failure, "cannot load %s: %s", soname, dlerror());
  return h;
}

/* The symbol's address, or NULL with failure set when the library lacks it. */
static void *find(void *h, const char *lib, const char *symbol) {
  void *p = dlsym(h, symbol);
  if (!p && !failure[0])
    snprintf(failure, sizeof failure, "%s has no %s (a cuBLAS older than the headers Surge was built with?)", lib,
             symbol);
  return p;
}

static void load(void) {
  static const char *const blas = SONAME("libcublas", CUBLAS_VER_MAJOR);
  static const char *const lt = SONAME("libcublasLt", CUBLAS_VER_MAJOR);
  void *hl = open_lib(lt), *hb = hl ? open_lib(blas) : NULL;
  if (!hb) return;
  /* an object pointer into a function pointer: copied, as POSIX's dlsym intends */
#define CUDA_BLAS_FIND(field, symbol)                                                                    \
  {                                                                                                      \
    void *p = find(hb, blas, #symbol);                                                                   \
    memcpy(&cuda_blas_api.field, &p, sizeof p);                                                          \
  }
#define CUDA_BLASLT_FIND(field, symbol)                                                                  \
  {                                                                                                      \
    void *p = find(hl, lt, #symbol);                                                                     \
    memcpy(&cuda_blas_api.field, &p, sizeof p);                                                          \
  }
  CUDA_BLAS_ENTRIES(CUDA_BLAS_FIND)
  CUDA_BLASLT_ENTRIES(CUDA_BLASLT_FIND)
#undef CUDA_BLAS_FIND
#undef CUDA_BLASLT_FIND
  if (failure[0]) memset(&cuda_blas_api, 0, sizeof cuda_blas_api);
}

int cuda_blas_api_load(char *err, size_t err_n) {
  pthread_once(&once, load);
  if (!failure[0]) return 0;
  snprintf(err, err_n, "%s", failure);
  return -1;
}
