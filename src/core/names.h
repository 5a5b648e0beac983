/* Lists of accepted names for messages ("accepted: mlp, vgg-mini, ..."), built from the tables that
 * define them, so a message never lists a name the code does not accept. */
#ifndef SURGE_NAMES_H
#define SURGE_NAMES_H

#include <stddef.h>

/* Append name to the list in buf (len bytes, NUL-terminated), after ", " unless buf is empty;
 * a name that does not fit is cut. */
void names_append(char *buf, size_t len, const char *name);

#endif
