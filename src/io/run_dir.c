#include "io/run_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/printable.h"

int run_dir_make(const char *dir, char *failed, size_t failed_len) {
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path) {
    snprintf(failed, failed_len, "%s", dir);
    errno = n ? ENAMETOOLONG : ENOENT;
    return -1;
  }
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] != '/' && path[i] != '\0') continue;
    char keep = path[i];
    path[i] = '\0';
    struct stat st;
    if (mkdir(path, 0777) != 0 && !(errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
      if (errno == EEXIST) errno = ENOTDIR;
      snprintf(failed, failed_len, "%s", path);
      return -1;
    }
    path[i] = keep;
  }
  return 0;
}

int run_dir_prepare(const char *dir, char *why, size_t why_len) {
  char failed[4096];
  if (run_dir_make(dir, failed, sizeof failed) != 0) {
    snprintf(why, why_len, "cannot create %s: %s", failed, strerror(errno));
    return -1;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(why, why_len, "%s is not writable: %s", dir, strerror(errno));
    return -1;
  }
  return 0;
}

void run_dir_of(const char *path, char *out, size_t out_len) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(out, out_len, ".");
  else if (slash == path) snprintf(out, out_len, "/");
  else snprintf(out, out_len, "%.*s", (int)(slash - path), path);
}

int run_dir_same(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* What the lock file of a held lock says, escaped and on one line. */
static void holder_text(int fd, char *out, size_t n) {
  char raw[256];
  ssize_t got = pread(fd, raw, sizeof raw - 1, 0);
  raw[got > 0 ? got : 0] = '\0';
  raw[strcspn(raw, "\n")] = '\0';
  if (!raw[0]) snprintf(raw, sizeof raw, "a process that has not yet said who it is");
  printable(raw, out, n);
}

int run_dir_lock(const char *dir, char *why, size_t why_len) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, RUN_LOCK_NAME);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0664);
  if (fd < 0) {
    snprintf(why, why_len, "cannot open the lock file %s: %s", path, strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err == EWOULDBLOCK) {
      char holder[300];
      holder_text(fd, holder, sizeof holder);
      snprintf(why, why_len, "held by %s (lock file %s)", holder, path);
      close(fd);
      return -1;
    }
    snprintf(why, why_len, "cannot lock %s: %s", path, strerror(err));
    close(fd);
    return err == EOPNOTSUPP || err == ENOLCK || err == ENOSYS || err == EINVAL ? -2 : -1;
  }
  char host[256] = "unknown host", started[32], text[400];
  gethostname(host, sizeof host - 1);
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &tm);
  int len = snprintf(text, sizeof text, "surge-train pid %ld on %s since %s\n", (long)getpid(), host, started);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len) {
    snprintf(why, why_len, "cannot write the lock file %s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

void run_dir_unlock(int fd) {
  if (fd >= 0) close(fd);
}

void run_dir_new_id(char out[17]) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    v = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 32;
    for (const char *p = host; *p; p++) v = (v ^ (unsigned char)*p) * 0x100000001b3ull; // FNV-1a step
  }
  snprintf(out, 17, "%016llx", (unsigned long long)v);
}
