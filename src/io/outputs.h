/* A program's output files against its inputs (doc/security.md, "Outputs never replace inputs"): a
 * mistyped command must not cost a file. An output is refused (an input error naming the options)
 * when it names an input (the same text, or the same existing file), when two outputs name one
 * file, when it exists and is not a regular file (a device or a directory: a write by rename would
 * replace the device node itself, as root even /dev/full), or when its name is empty. */
#ifndef SURGE_IO_OUTPUTS_H
#define SURGE_IO_OUTPUTS_H

typedef struct io_path {
  const char *what; /* how the command names it: "--logits", "OUT", "[log] file" */
  const char *path; /* NULL: not given (skipped); "-": standard output (skipped as an output) */
} io_path_t;

/* Whether two paths name one file: the same text, or the same existing file. */
int io_same_file(const char *a, const char *b);

/* The checks above for outputs out[0..nout) against inputs in[0..nin). */
void io_outputs_check(const io_path_t *in, int nin, const io_path_t *out, int nout);

#endif
