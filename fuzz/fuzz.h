/* What the libFuzzer harnesses of fuzz/ share (doc/security.md, "Fuzzing"). Each harness feeds one
 * reader of untrusted input; an input error (exit 2 in the programs) comes back here through the
 * fail hook of core/error.h instead of ending the process, and the harness goes on with the next
 * input. A runtime error (exit 1) on input is a finding (bad input must be named as such), and so is
 * anything the sanitizers catch. */
#ifndef SURGE_FUZZ_H
#define SURGE_FUZZ_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

extern jmp_buf fuzz_env;

/* Install the fail hook, quiet HDF5 and note the open file descriptors; call once, last in
 * LLVMFuzzerInitialize. */
void fuzz_init(void);
/* Run body; returns 0 when it finished, 2 when it stopped on an input error. A runtime error
 * aborts (a finding). Use as: if (FUZZ_TRY()) { ... } then fuzz_done(). */
#define FUZZ_TRY() (setjmp(fuzz_env) == 0)
/* After a FUZZ_TRY block (whether it finished or not): close every HDF5 object a reader left open
 * when it stopped, so the next input starts clean. */
void fuzz_h5_close_all(void);
/* After a FUZZ_TRY block: close every file descriptor opened since fuzz_init (a text reader stopped
 * by an input error leaves its file open; the programs exit there). Its FILE stays allocated. */
void fuzz_fds_close(void);
/* The input as a NUL-terminated string (malloc'd); bytes after a NUL byte are cut, as a reader of
 * text files would refuse them. */
char *fuzz_text(const uint8_t *data, size_t size);
/* Write the input to DIR/name in a private temporary directory (made once): its path. */
const char *fuzz_file(const uint8_t *data, size_t size, const char *name);
/* That directory. */
const char *fuzz_dir(void);

#endif
