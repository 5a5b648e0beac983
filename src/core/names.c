#include "core/names.h"

#include <stdio.h>
#include <string.h>

void names_append(char *buf, size_t len, const char *name) {
  size_t used = strlen(buf);
  if (used + 1 >= len) return;
  snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
}
