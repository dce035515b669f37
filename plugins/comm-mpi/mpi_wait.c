/*
 * mpi_wait.c — waiting for MPI's non-blocking calls against the caller's
 * deadline (comm-api.h rule 6), and the failures that break a
 * communicator. A request that timed out cannot be cancelled when it is a
 * collective (MPI has no cancel for those), so the communicator is marked
 * broken and left to MPI; the MPI lock is held only around each MPI call,
 * never while waiting.
 */
#include <sched.h>
#include <time.h>

#include "mpi_lib.h"

/* A poll spins on sched_yield for this many tries without progress before
 * it sleeps, which keeps transfers moving (MPI progresses only inside the
 * calls that poll it) without burning a core on a long wait. */
#define SPIN_TRIES 2000
#define SLEEP_MAX_NS 1000000L

double mpi_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void mpi_backoff(mpi_backoff_t *b) {
  if (b->tries++ < SPIN_TRIES) {
    sched_yield();
    return;
  }
  if (b->sleep_ns == 0) b->sleep_ns = 1000;
  struct timespec ts = {0, b->sleep_ns};
  nanosleep(&ts, NULL);
  if (b->sleep_ns < SLEEP_MAX_NS) b->sleep_ns *= 2;
}

static bp_status_t broken(mpi_comm_t *c) {
  if (c) c->broken = true;
  mpi_lib_note_broken();
  return BP_ERR_UNAVAILABLE;
}

bp_status_t mpi_failed(mpi_comm_t *c, const char *fn, int rc) {
  char msg[400];
  mpi_lib_error(fn, rc, msg, sizeof msg);
  mpi_host->set_error("%s; the communicator is broken", msg);
  return broken(c);
}

bp_status_t mpi_timed_out(mpi_comm_t *c, const char *what, uint32_t timeout_ms) {
  mpi_host->set_error(
      "%s: not every rank took part within %u ms (a rank died, hangs, is unreachable, or "
      "made another call); the communicator is broken",
      what, timeout_ms);
  broken(c);
  return BP_ERR_TIMEOUT;
}

bp_status_t mpi_wait(mpi_comm_t *c, MPI_Request *req, uint32_t timeout_ms, const char *what) {
  double deadline = mpi_now_ms() + timeout_ms;
  mpi_backoff_t wait = {0};
  for (;;) {
    int flag = 0;
    pthread_mutex_lock(&mpi_lock);
    int rc = mpi.MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    pthread_mutex_unlock(&mpi_lock);
    if (rc != MPI_SUCCESS) return mpi_failed(c, what, rc);
    if (flag) return BP_OK;
    if (timeout_ms && mpi_now_ms() > deadline) return mpi_timed_out(c, what, timeout_ms);
    mpi_backoff(&wait);
  }
}
