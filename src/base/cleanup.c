/* cleanup.c - removing staging on SIGINT, SIGTERM, SIGHUP and SIGQUIT (docs/ARCHITECTURE.md,
 * "Outputs").
 *
 * This is fidelis' one piece of process-wide mutable state, on purpose: a signal is sent to the
 * process, not to a call, so the list of what to remove when one comes is the process's too.
 * The signals are blocked in every thread and taken by one thread with sigwait, so the removal
 * runs in ordinary thread context (it may lock, allocate and walk directories) rather than in
 * a signal handler. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sys.h"
#include "base/fs.h"

/* More outputs than any command stages at once (compare: one directory; capture: two). */
#define CLEANUP_SLOTS 16

static struct {
  pthread_mutex_t mu;
  char *path[CLEANUP_SLOTS];
  bool dir[CLEANUP_SLOTS];
} reg = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}};

static void signal_set(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGHUP);
  sigaddset(set, SIGQUIT);
}

static void *waiter(void *arg) {
  (void)arg;
  sigset_t set;
  signal_set(&set);
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  pthread_mutex_lock(&reg.mu);
  for (int i = 0; i < CLEANUP_SLOTS; i++) {
    if (!reg.path[i]) continue;
    if (reg.dir[i])
      (void)fdl_remove_tree_at(AT_FDCWD, reg.path[i], NULL);
    else
      (void)unlink(reg.path[i]);
  }
  /* The lock stays held: no stage may register after the sweep. Then the signal's own default
   * action ends the process, so the parent sees the status it would have seen. */
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, NULL);
  raise(sig); /* the default action of all four ends the process: nothing runs after this */
  return NULL;
}

bool fdl_cleanup_on_signals(void) {
  sigset_t set, old;
  signal_set(&set);
  if (pthread_sigmask(SIG_BLOCK, &set, &old) != 0) return false;
  pthread_t t;
  if (pthread_create(&t, NULL, waiter, NULL) != 0) {
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return false;
  }
  pthread_detach(t);
  return true;
}

void fdl_cleanup_hold(void) {
  pthread_mutex_lock(&reg.mu);
}

void fdl_cleanup_release(void) {
  pthread_mutex_unlock(&reg.mu);
}

void fdl_cleanup_add_held(const char *path, bool dir) {
  char *p = fdl_strdup(path);
  if (!p) return;
  for (int i = 0; i < CLEANUP_SLOTS; i++)
    if (!reg.path[i]) {
      reg.path[i] = p, reg.dir[i] = dir, p = NULL;
      break;
    }
  free(p);
}

void fdl_cleanup_forget(const char *path) {
  pthread_mutex_lock(&reg.mu);
  for (int i = 0; i < CLEANUP_SLOTS; i++)
    if (reg.path[i] && !strcmp(reg.path[i], path)) {
      free(reg.path[i]);
      reg.path[i] = NULL;
      break;
    }
  pthread_mutex_unlock(&reg.mu);
}
