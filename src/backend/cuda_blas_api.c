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

/* dlopen the soname, else under dir (when not NULL); NULL with the loader's words in err. */
static void *open_lib(const char *soname, const char *dir, char *err, size_t err_n) {
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!h && dir) {
    char path[768];
    snprintf(path, sizeof path, "%s/%s", dir, soname);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) snprintf(err, err_n, "cannot load %s: %s", soname, dlerror());
  return h;
}

/* The symbol's address, or NULL with err set (its first such failure) when the library lacks it. */
static void *find(void *h, const char *lib, const char *symbol, char *err, size_t err_n) {
  void *p = dlsym(h, symbol);
  if (!p && !err[0])
    snprintf(err, err_n, "%s has no %s (a cuBLAS older than the headers Surge was built with?)", lib, symbol);
  return p;
}

int cuda_blas_api_load_from(const char *blas, const char *lt, const char *dir, cuda_blas_api_t *api, char *err,
                            size_t err_n) {
  err[0] = '\0';
  memset(api, 0, sizeof *api);
  void *hl = open_lib(lt, dir, err, err_n), *hb = hl ? open_lib(blas, dir, err, err_n) : NULL;
  if (!hb) return -1;
  /* an object pointer into a function pointer: copied, as POSIX's dlsym intends */
#define CUDA_BLAS_FIND(field, symbol)                                                                    \
  {                                                                                                      \
    void *p = find(hb, blas, #symbol, err, err_n);                                                       \
    memcpy(&api->field, &p, sizeof p);                                                                   \
  }
#define CUDA_BLASLT_FIND(field, symbol)                                                                  \
  {                                                                                                      \
    void *p = find(hl, lt, #symbol, err, err_n);                                                         \
    memcpy(&api->field, &p, sizeof p);                                                                   \
  }
  CUDA_BLAS_ENTRIES(CUDA_BLAS_FIND)
  CUDA_BLASLT_ENTRIES(CUDA_BLASLT_FIND)
#undef CUDA_BLAS_FIND
#undef CUDA_BLASLT_FIND
  if (!err[0]) return 0;
  memset(api, 0, sizeof *api);
  return -1;
}

static void load(void) {
#ifdef SURGE_CUDA_LIBDIR
  const char *dir = SURGE_CUDA_LIBDIR;
#else
  const char *dir = NULL;
#endif
  cuda_blas_api_load_from(SONAME("libcublas", CUBLAS_VER_MAJOR), SONAME("libcublasLt", CUBLAS_VER_MAJOR), dir,
                          &cuda_blas_api, failure, sizeof failure);
}

int cuda_blas_api_load(char *err, size_t err_n) {
  pthread_once(&once, load);
  if (!failure[0]) return 0;
  snprintf(err, err_n, "%s", failure);
  return -1;
}
