/* A program's output files against its inputs (doc/security.md, "Outputs never replace inputs"): a
 * mistyped command must not cost a file. An output is refused (an input error naming the options)
 * when it names an input (the same text, or the same existing file), when two outputs name one
 * file, when it is an existing directory, when its name is empty, and, for an output written as a
 * whole file (HDF5, or under a temporary name renamed into place), when it exists and is not a
 * regular file: a rename would replace a device node itself (as root, surge-convert m.h5 /dev/full
 * replaced the device), and HDF5 on a fifo waits for a reader. A text output written as a stream
 * may be a device or a fifo (/dev/stdout, /dev/null, a shell's process substitution). An output
 * whose directory does not exist is refused too, before the program's work, unless the program makes
 * that directory itself (dir_made). */
#ifndef SURGE_IO_OUTPUTS_H
#define SURGE_IO_OUTPUTS_H

typedef struct io_path {
  const char *what; /* how the command names it: "--tokens", "IN", "[model] init" */
  const char *path; /* NULL: not given (skipped) */
} io_path_t;

typedef struct io_output {
  const char *what; /* "--logits", "OUT", "[log] file" */
  const char *path; /* NULL: not written (skipped) */
  int stream;       /* written as a text stream (fopen): a device or fifo is fine */
  int dir_made;     /* the program makes the output's directory: not checked for one */
} io_output_t;

/* Whether two paths name one file: the same text, or the same existing file. */
int io_same_file(const char *a, const char *b);

/* The checks above for outputs out[0..nout) against inputs in[0..nin). */
void io_outputs_check(const io_path_t *in, int nin, const io_output_t *out, int nout);

#endif
