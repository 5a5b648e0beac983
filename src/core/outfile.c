#include "core/outfile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

char *outfile_temp(const char *path) {
  const size_t n = strlen(path) + sizeof ".tmp";
  char *tmp = xmalloc(n);
  snprintf(tmp, n, "%s.tmp", path);
  unlink(tmp);
  return tmp;
}

int outfile_publish(const char *tmp, const char *final) {
  if (rename(tmp, final) == 0) return 0;
  const int e = errno;
  unlink(tmp);
  errno = e;
  return -1;
}

int outfile_publish_new(const char *tmp, const char *final) {
  if (link(tmp, final) != 0) {
    if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS) return -1;
    if (access(final, F_OK) == 0) return errno = EEXIST, -1;
    return rename(tmp, final);
  }
  unlink(tmp);
  return 0;
}
