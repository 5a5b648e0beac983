#include "core/outfile.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

int outfile_publish_new(const char *tmp, const char *final) {
  if (link(tmp, final) != 0) {
    if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS) return -1;
    if (access(final, F_OK) == 0) return errno = EEXIST, -1;
    return rename(tmp, final);
  }
  unlink(tmp);
  return 0;
}
