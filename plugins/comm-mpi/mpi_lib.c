/*
 * mpi_lib.c — opening Open MPI at run time and initialising it.
 *
 * libmpi is opened RTLD_GLOBAL: Open MPI dlopens its own components
 * (mca_*.so), which resolve symbols of libmpi and libopen-pal through the
 * global scope. MPI is initialised only when the application has not done
 * it; then the plugin owns it and finalises it at process exit (MPI allows
 * one initialisation per process, so finalising when the last communicator
 * goes would forbid the next one).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_lib.h"

mpi_lib_t mpi;
pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
const bp_host_services_t *mpi_host;

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static bool we_initialised, any_broken;

static bp_status_t resolve(void *dl) {
#define MPI_FN_RESOLVE(ret, name, params)                                                        \
  if (!(*(void **)&mpi.name = dlsym(dl, #name))) {                                               \
    mpi_host->set_error("libmpi has no %s: not an MPI-3 library", #name);                        \
    return BP_ERR_UNAVAILABLE;                                                                   \
  }
  MPI_FUNCTIONS(MPI_FN_RESOLVE)
#undef MPI_FN_RESOLVE
#define MPI_OBJ_RESOLVE(field, symbol)                                                           \
  if (!(mpi.field = dlsym(dl, symbol))) {                                                        \
    mpi_host->set_error("libmpi has no %s: not Open MPI's ABI (the only one this plugin speaks)", \
                        symbol);                                                                 \
    return BP_ERR_UNAVAILABLE;                                                                   \
  }
  MPI_OBJECTS(MPI_OBJ_RESOLVE)
#undef MPI_OBJ_RESOLVE
  return BP_OK;
}

bp_status_t mpi_lib_open(void) {
  pthread_mutex_lock(&open_lock);
  bp_status_t st = BP_OK;
  if (!mpi.dl) {
    const char *env = mpi_host && mpi_host->getenv ? mpi_host->getenv("BACKPLANE_MPI_LIBRARY") : NULL;
    const char *name = env && env[0] ? env : "libmpi.so.40";
    void *dl = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
    if (!dl) {
      const char *e = dlerror();
      mpi_host->set_error("%s not found (%s); install Open MPI (Debian: openmpi-bin libopenmpi3)", name,
                          e ? e : "dlopen failed");
      st = BP_ERR_UNAVAILABLE;
    } else if ((st = resolve(dl)) == BP_OK) {
      mpi.dl = dl; /* never dlclosed: Open MPI keeps threads */
    } else {
      memset(&mpi, 0, sizeof mpi);
    }
  }
  pthread_mutex_unlock(&open_lock);
  return st;
}

void mpi_lib_version(char *out, size_t size) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
  int len = 0;
  if (mpi.MPI_Get_library_version(v, &len) != MPI_SUCCESS) snprintf(v, sizeof v, "MPI (version unknown)");
  v[strcspn(v, ",\n")] = '\0'; /* "Open MPI v4.1.4, package: ..." */
  snprintf(out, size, "%s", v);
}

void mpi_lib_error(const char *fn, int code, char *out, size_t size) {
  char text[MPI_MAX_ERROR_STRING + 1] = {0};
  int len = 0;
  if (mpi.MPI_Error_string(code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", code);
  snprintf(out, size, "%s: %s", fn, text);
}

void mpi_lib_note_broken(void) {
  pthread_mutex_lock(&open_lock);
  any_broken = true;
  pthread_mutex_unlock(&open_lock);
}

static void finalize_at_exit(void) {
  int done = 0;
  if (any_broken) return; /* MPI_Finalize would wait for the dead */
  if (mpi.MPI_Finalized(&done) == MPI_SUCCESS && !done) mpi.MPI_Finalize();
}

bp_status_t mpi_lib_ensure_init(void) {
  pthread_mutex_lock(&open_lock);
  int flag = 0, done = 0, provided = 0;
  bp_status_t st = BP_OK;
  mpi.MPI_Initialized(&flag);
  mpi.MPI_Finalized(&done);
  if (done) {
    mpi_host->set_error("MPI was already finalised in this process: a communicator cannot be made");
    st = BP_ERR_UNAVAILABLE;
  } else if (!flag) {
    int rc = mpi.MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
      mpi_host->set_error("MPI_Init_thread failed (error %d)", rc);
      st = BP_ERR_UNAVAILABLE;
    } else if (!we_initialised) {
      we_initialised = true;
      mpi.MPI_Comm_set_errhandler(mpi.comm_world, mpi.errors_return);
      atexit(finalize_at_exit);
    }
  }
  pthread_mutex_unlock(&open_lock);
  return st;
}
