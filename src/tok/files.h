/* The documents of a corpus: the files named, and the regular files under the directories named
 * (recursively, in byte-wise name order, hidden names skipped), in the order given. */
#ifndef SURGE_TOK_FILES_H
#define SURGE_TOK_FILES_H

#include <stddef.h>

typedef struct file_list {
  char **path; /* (n) malloc'd */
  size_t n, cap;
} file_list_t;

/* Expand paths[0..npaths); a missing path or a corpus of no files is an input error. */
void file_list_expand(file_list_t *l, char *const *paths, int npaths);
void file_list_free(file_list_t *l);
/* The whole of a file, malloc'd and NUL-terminated (*len bytes). A file over max bytes is an input
 * error: "PATH: N bytes, more than WHAT may have (M MiB; hint: HINT)". */
unsigned char *file_read_all(const char *path, size_t max, const char *what, const char *hint, size_t *len);

#endif
