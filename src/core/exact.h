/* Numbers in messages exactly as they are: the shortest decimal text that reads back (strtod) as
 * the same double, so a message never says "1e+12 is not in [0, 1e+12]" of a value just above
 * the bound, nor prints a bound as 1.0000000000000001e-09. */
#ifndef SURGE_CORE_EXACT_H
#define SURGE_CORE_EXACT_H

enum { EXACT_LEN = 32 };

/* v as that text in buf (EXACT_LEN bytes; "nan", "inf", "-inf" as printf writes them); returns buf. */
const char *exact_text(double v, char *buf);

#endif
