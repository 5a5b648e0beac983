/* Output files that take their names only when whole: written under a temporary name, then given
 * their own, so a program stopped, killed or out of disk half-way leaves nothing under the name. */
#ifndef SURGE_CORE_OUTFILE_H
#define SURGE_CORE_OUTFILE_H

/* path's temporary name, path + ".tmp" (allocated; free it), a file there (a killed run's leftover)
 * removed first, so that creating it makes a new file and never writes through a link left there. */
char *outfile_temp(const char *path);

/* The file written whole at tmp given the name final, replacing a file there; on a failure tmp is
 * removed. 0, or -1 with rename's errno. */
int outfile_publish(const char *tmp, const char *final);

/* The file written whole at tmp given the name final, never replacing a file there: linked, then tmp
 * removed (a rename where the file system has no links, after checking that the name is free).
 * 0, or -1 with errno (EEXIST: the name was taken). */
int outfile_publish_new(const char *tmp, const char *final);

#endif
