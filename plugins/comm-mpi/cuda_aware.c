/*
 * cuda_aware.c — whether the Open MPI this plugin opened takes CUDA device
 * pointers ("CUDA-aware"), so that the core may hand it a CUDA device's
 * buffers as they are instead of staging them through host memory
 * (docs/scale-out.md, "CUDA-aware MPI").
 *
 * Open MPI answers through MPIX_Query_cuda_support() (its mpiext "cuda"
 * extension, resolved with dlsym: older or other builds lack it), and only
 * once MPI is initialised (before, the flag it reads is not set yet). So
 * probe, which must not initialise MPI, decides only what it can: no (the
 * function is missing, OMPI_MCA_opal_cuda_support turns the support off,
 * or MPI is already initialised and says no), yes (already initialised and
 * says yes), or "ask at MPI_Init", in which case probe claims CUDA memory
 * and comm_create confirms after initialising MPI, refusing the memory
 * with BP_ERR_UNSUPPORTED when the answer is no (the core then stages).
 * BACKPLANE_MPI_CUDA_AWARE=1 or 0 overrides the detection both ways (an MPI
 * that misreports, and the tests).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "mpi_lib.h"

/* "1"/"yes"/"true" and "0"/"no"/"false"; -1 for anything else. */
static int env_flag(const char *name) {
  const char *v = mpi_host && mpi_host->getenv ? mpi_host->getenv(name) : NULL;
  if (!v || !v[0]) return -1;
  if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true")) return 1;
  if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false")) return 0;
  return -1;
}

/* MPIX_Query_cuda_support, or NULL where this libmpi has none. */
static int (*query_fn(void))(void) {
  int (*fn)(void) = NULL;
  if (mpi.dl) *(void **)&fn = dlsym(mpi.dl, "MPIX_Query_cuda_support");
  return fn;
}

static bool initialised(void) {
  int flag = 0, done = 0;
  mpi.MPI_Initialized(&flag);
  mpi.MPI_Finalized(&done);
  return flag && !done;
}

mpi_cuda_t mpi_cuda_detect(char *why, size_t size) {
  int forced = env_flag("BACKPLANE_MPI_CUDA_AWARE");
  if (forced >= 0) {
    snprintf(why, size, "BACKPLANE_MPI_CUDA_AWARE=%d", forced);
    return forced ? MPI_CUDA_YES : MPI_CUDA_NO;
  }
  if (env_flag("OMPI_MCA_opal_cuda_support") == 0) {
    snprintf(why, size, "OMPI_MCA_opal_cuda_support turns Open MPI's CUDA support off");
    return MPI_CUDA_NO;
  }
  int (*fn)(void) = query_fn();
  if (!fn) {
    snprintf(why, size, "this libmpi has no MPIX_Query_cuda_support (not a CUDA-aware Open MPI)");
    return MPI_CUDA_NO;
  }
  if (!initialised()) {
    snprintf(why, size, "MPIX_Query_cuda_support() is asked once MPI is initialised");
    return MPI_CUDA_AT_INIT;
  }
  pthread_mutex_lock(&mpi_lock);
  int yes = fn();
  pthread_mutex_unlock(&mpi_lock);
  snprintf(why, size, "MPIX_Query_cuda_support() = %d", yes);
  return yes ? MPI_CUDA_YES : MPI_CUDA_NO;
}
