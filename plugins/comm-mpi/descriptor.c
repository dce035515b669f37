/*
 * descriptor.c — comm-mpi.so's descriptor: init, probe, and communicators
 * made by duplicating MPI_COMM_WORLD (so the application's own traffic on
 * MPI_COMM_WORLD never matches ours), with MPI_ERRORS_RETURN so that a
 * transport error comes back as a status instead of aborting the job.
 * Bootstrap: an application that called MPI_Init keeps its MPI; a process
 * started by mpirun (OMPI_COMM_WORLD_SIZE set) is initialised here; a
 * process started alone becomes a one-rank MPI job (Open MPI's singleton).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_lib.h"

/* Messages from this size take the ring; below, MPI's latency-optimal
 * non-blocking collectives are faster. Segments are large because every
 * message costs a handshake (rendezvous) that small ones do not repay. */
#define RING_MIN_BYTES (64u << 10)
#define RING_SEGMENT_BYTES (1u << 20)

static int init_count;

static bp_status_t mpi_init_plugin(const bp_host_services_t *host) {
  mpi_host = host;
  init_count++; /* one init per context that loads the plugin, paired with shutdown */
  return BP_OK;
}

static void mpi_shutdown_plugin(void) {
  /* MPI stays initialised until exit (mpi_lib.c says why). */
  if (init_count > 0) init_count--;
}

static int env_int(const char *name) {
  const char *v = mpi_host->getenv(name);
  return v && v[0] ? atoi(v) : -1;
}

static bp_status_t mpi_probe(bp_comm_info_t *info) {
  bp_status_t st = mpi_lib_open();
  if (st != BP_OK) return st;
  mpi_lib_version(info->library, sizeof info->library);
  char why[160];
  mpi_cuda_t cuda = mpi_cuda_detect(why, sizeof why);
  info->memory_kinds = BP_COMM_MEMORY_BIT(BP_COMM_MEMORY_HOST);
  if (cuda != MPI_CUDA_NO) info->memory_kinds |= BP_COMM_MEMORY_BIT(BP_COMM_MEMORY_CUDA);
  info->reduce_dtypes = BP_DTYPE_BIT(BP_F32) | BP_DTYPE_BIT(BP_F64) | BP_DTYPE_BIT(BP_I32) |
                        BP_DTYPE_BIT(BP_I64) | BP_DTYPE_BIT(BP_U8);
  info->score_hint = 10;
  info->launched_rank = env_int("OMPI_COMM_WORLD_RANK");
  info->launched_size = env_int("OMPI_COMM_WORLD_SIZE");
  snprintf(info->description, sizeof info->description, "host memory; CUDA device memory %s (%s); "
           "bootstrap: mpirun, the application's MPI_Init, or a singleton",
           cuda == MPI_CUDA_YES ? "directly" : cuda == MPI_CUDA_NO ? "staged by the core" : "directly if CUDA-aware",
           why);
  return BP_OK;
}

/* Checks the caller's size and rank against MPI's. */
static bp_status_t agree(const bp_comm_config_t *cfg, int rank, int size) {
  if (cfg->size <= 0 || (cfg->size == size && cfg->rank == rank)) return BP_OK;
  mpi_host->set_error("asked for rank %d of %d, but MPI_COMM_WORLD makes this process rank %d of %d "
                      "(the MPI plugin takes its ranks from mpirun; leave size 0)", cfg->rank, cfg->size,
                      rank, size);
  return BP_ERR_INVALID_ARGUMENT;
}

/* Where the ring takes over from MPI's own non-blocking collectives
 * (ring.c): BACKPLANE_MPI_RING_BYTES (a message size; "off" never) and
 * BACKPLANE_MPI_RING_SEGMENT (bytes per segment), mostly for tests. */
static void ring_settings(mpi_comm_t *c) {
  const char *v = mpi_host->getenv("BACKPLANE_MPI_RING_BYTES");
  c->ring_min_bytes = RING_MIN_BYTES;
  if (v && !strcmp(v, "off")) c->ring_min_bytes = UINT64_MAX;
  else if (v && v[0]) c->ring_min_bytes = strtoull(v, NULL, 0);
  v = mpi_host->getenv("BACKPLANE_MPI_RING_SEGMENT");
  c->ring_segment_bytes = v && v[0] && strtoull(v, NULL, 0) > 0 ? strtoull(v, NULL, 0) : RING_SEGMENT_BYTES;
}

static bp_status_t mpi_comm_create(const bp_comm_config_t *cfg, bp_plugin_comm_t **out, int32_t *out_rank,
                                   int32_t *out_size) {
  if (cfg->memory != BP_COMM_MEMORY_HOST && cfg->memory != BP_COMM_MEMORY_CUDA) {
    mpi_host->set_error("Open MPI is given host or CUDA memory only");
    return BP_ERR_UNSUPPORTED;
  }
  bp_status_t st = mpi_lib_open();
  if (st == BP_OK) st = mpi_lib_ensure_init();
  if (st != BP_OK) return st;
  char why[160];
  if (cfg->memory == BP_COMM_MEMORY_CUDA && mpi_cuda_detect(why, sizeof why) != MPI_CUDA_YES) {
    /* comm-api.h rule 10: the core stages through host memory instead */
    mpi_host->set_error("Open MPI does not take CUDA device pointers: %s", why);
    return BP_ERR_UNSUPPORTED;
  }
  mpi_comm_t *c = calloc(1, sizeof *c);
  if (!c) return BP_ERR_OUT_OF_MEMORY;
  MPI_Request req;
  pthread_mutex_lock(&mpi_lock);
  int rank = 0, size = 0;
  mpi.MPI_Comm_rank(mpi.comm_world, &rank);
  mpi.MPI_Comm_size(mpi.comm_world, &size);
  int rc = mpi.MPI_Comm_idup(mpi.comm_world, &c->comm, &req);
  pthread_mutex_unlock(&mpi_lock);
  st = agree(cfg, rank, size);
  if (st == BP_OK && rc != MPI_SUCCESS) {
    char msg[400];
    mpi_lib_error("MPI_Comm_idup", rc, msg, sizeof msg);
    mpi_host->set_error("%s", msg);
    st = BP_ERR_UNAVAILABLE;
  }
  /* Joining is collective: the wait is bounded like any other call's. */
  if (rc == MPI_SUCCESS) {
    bp_status_t w = mpi_wait(NULL, &req, cfg->timeout_ms, "MPI_Comm_idup");
    if (st == BP_OK) st = w;
  }
  if (st != BP_OK) {
    free(c); /* a dup that never completed is MPI's to keep */
    return st;
  }
  pthread_mutex_lock(&mpi_lock);
  mpi.MPI_Comm_set_errhandler(c->comm, mpi.errors_return);
  pthread_mutex_unlock(&mpi_lock);
  c->rank = rank;
  c->size = size;
  c->memory = cfg->memory;
  ring_settings(c);
  *out = c;
  *out_rank = rank;
  *out_size = size;
  return BP_OK;
}

static void mpi_comm_destroy(bp_plugin_comm_t *c) {
  /* MPI_Comm_free of a communicator with requests that never completed
   * would wait for dead peers: a broken one is left to MPI. */
  if (!c->broken) {
    pthread_mutex_lock(&mpi_lock);
    mpi.MPI_Comm_free(&c->comm);
    pthread_mutex_unlock(&mpi_lock);
    free(c->ring_scratch); /* a broken one's may still be written by a request MPI keeps */
  }
  free(c);
}

BP_PLUGIN_EXPORT const bp_comm_descriptor_t bp_comm_descriptor = {
    .magic = BP_COMM_MAGIC,
    .abi_major = BP_COMM_ABI_MAJOR,
    .abi_minor = BP_COMM_ABI_MINOR,
    .struct_size = sizeof(bp_comm_descriptor_t),
    .name = "mpi",
    .version = "0.1.0",
    .description = "collectives through Open MPI (libmpi.so.40, opened at run time)",
    .init = mpi_init_plugin,
    .shutdown = mpi_shutdown_plugin,
    .probe = mpi_probe,
    .comm_create = mpi_comm_create,
    .comm_destroy = mpi_comm_destroy,
    .all_reduce = mpi_all_reduce,
    .all_gather = mpi_all_gather,
    .reduce_scatter = mpi_reduce_scatter,
    .broadcast = mpi_broadcast,
    .reduce = mpi_reduce,
    .send = mpi_send,
    .recv = mpi_recv,
    .barrier = mpi_barrier,
};
