#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "io/h5serial.h"

#include <pthread.h>

#include "core/error.h"

static pthread_mutex_t lock;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Thread_local int depth; /* levels this thread holds */

static void make_lock(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT); /* best effort: not every system has it */
  if (pthread_mutex_init(&lock, &a) != 0) {
    pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_NONE);
    if (pthread_mutex_init(&lock, &a) != 0) surge_runtime_error("h5_serial: cannot create the HDF5 lock");
  }
  pthread_mutexattr_destroy(&a);
}

int h5_serial_lock(void) {
  pthread_once(&once, make_lock);
  pthread_mutex_lock(&lock);
  depth++;
  return 1;
}

void h5_serial_unlock(int *token) {
  (void)token;
  depth--;
  pthread_mutex_unlock(&lock);
}

void h5_serial_release_all(void) {
  for (; depth > 0; depth--) pthread_mutex_unlock(&lock);
}
