/* The directories a run writes into: created without a shell (mkdir -p), checked writable before
 * anything runs, and owned by one run at a time. Ownership is an advisory lock (flock) on the file
 * RUN_LOCK_NAME in the directory, held from the start of the run to its end (the kernel drops it
 * when the process ends, however it ends); the file's text names the holder, so a second run
 * refused says who has the directory. Used by one process (rank 0 of a job). */
#ifndef SURGE_RUN_DIR_H
#define SURGE_RUN_DIR_H

#include <stddef.h>

#define RUN_LOCK_NAME ".surge-lock"

/* mkdir -p without a shell: 0, or -1 with errno set and the prefix that could not be made (or that
 * exists and is not a directory: ENOTDIR) in failed. */
int run_dir_make(const char *dir, char *failed, size_t failed_len);

/* Create dir and its parents; check that this process may create files in it. 0, or -1 with why
 * ("cannot create runs/x: Permission denied", "runs/x is not writable: Read-only file system"). */
int run_dir_prepare(const char *dir, char *why, size_t why_len);

/* The directory holding `path` ("." for a bare name) into out. */
void run_dir_of(const char *path, char *out, size_t out_len);

/* Whether a and b name the same existing directory (same device and inode). */
int run_dir_same(const char *a, const char *b);

/* Lock dir for this process: the lock's file descriptor (>= 0, close-on-exec; the lock lasts until
 * run_dir_unlock or the end of the process). -1 with why naming the holder when another process
 * holds it ("held by surge-train pid 4242 on node07 since 2026-01-31T12:00:00Z"). A file system
 * without locks (EOPNOTSUPP, ENOLCK) gives -2 with why saying so: the caller warns and goes on. */
int run_dir_lock(const char *dir, char *why, size_t why_len);
void run_dir_unlock(int fd);

/* A new run's identity: 16 hex digits from the system's random source (or, without one, from
 * the time, the process and the host). */
void run_dir_new_id(char out[17]);

#endif
