/* Input files opened so that nothing blocks: a FIFO (or a socket, a device) named where a file is
 * expected would stop a program forever in open(2), waiting for a writer, or in read(2). Every
 * reader of a file named on a command line or in a deck opens it here, or checks it here first when
 * a library (HDF5, zlib) opens it: anything but a regular file (or a directory, where one is asked
 * for) is an input error naming the path and what it is. */
#ifndef SURGE_CORE_INFILE_H
#define SURGE_CORE_INFILE_H

#include <stdio.h>
#include <sys/stat.h>

/* What a file of mode m is, for messages: "a FIFO", "a directory", "a socket", ... */
const char *infile_kind(mode_t m);
/* path opened for reading ("rb") without ever blocking (O_NONBLOCK until fstat shows a regular
 * file, then blocking reads), or NULL with errno set when it cannot be opened. A file that is
 * there but not regular is an input error: "PATH: not a regular file but a FIFO" and, when hint is
 * not NULL, " (hint: HINT)". */
FILE *infile_fopen(const char *path, const char *hint);
/* For a reader that opens path itself: 0 when path is a regular file (or a directory when dir_ok),
 * the same input error as above when it is anything else, -1 with errno set when stat fails.
 * Nothing is opened (stat(2) does not block). */
int infile_check(const char *path, int dir_ok, const char *hint);

#endif
