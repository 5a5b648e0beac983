#include "core/infile.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/error.h"

const char *infile_kind(mode_t m) {
  if (S_ISREG(m)) return "a regular file";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return "not a file";
}

static _Noreturn void refuse(const char *path, mode_t m, const char *hint) {
  surge_input_error("%s: not a regular file but %s%s%s%s", path, infile_kind(m), hint ? " (hint: " : "",
                    hint ? hint : "", hint ? ")" : "");
}

FILE *infile_fopen(const char *path, const char *hint) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    refuse(path, st.st_mode, hint);
  }
  int flags = fcntl(fd, F_GETFL);
  FILE *f = flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ? NULL : fdopen(fd, "rb");
  if (!f) {
    int e = errno;
    close(fd);
    errno = e;
  }
  return f;
}

int infile_check(const char *path, int dir_ok, const char *hint) {
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  if (!S_ISREG(st.st_mode) && !(dir_ok && S_ISDIR(st.st_mode))) refuse(path, st.st_mode, hint);
  return 0;
}
