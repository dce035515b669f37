/*
 * descriptor.c — the descriptor of comm-nccl.so (and, built with
 * -DBP_COMM_RCCL, comm-rccl.so): probe, and communicators made with
 * ncclCommInitRank on a stream of their own (gpu.h). The ranks share the
 * unique id through a file rendezvous: rank 0 writes it (to a temporary
 * name, then renamed, so nobody reads half an id) at the path the
 * bootstrap string "file:PATH" or BACKPLANE_NCCL_ID_FILE
 * (BACKPLANE_RCCL_ID_FILE) names, and the others wait for it within the
 * timeout; one rank needs no rendezvous. The path must be fresh for each
 * job. Size and rank come from the options, else from mpirun's environment
 * (OMPI_COMM_WORLD_SIZE/RANK), else from RANK/WORLD_SIZE (torchrun's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl_lib.h"

static bp_status_t nccl_init_plugin(const bp_host_services_t *host) {
  nccl_host = host;
  return BP_OK;
}

static void nccl_shutdown_plugin(void) {}

static int env_int(const char *a, const char *b) {
  const char *v = nccl_host->getenv(a);
  if (!v || !v[0]) v = b ? nccl_host->getenv(b) : NULL;
  return v && v[0] ? atoi(v) : -1;
}

static bp_status_t nccl_probe(bp_comm_info_t *info) {
  bp_status_t st = nccl_lib_open();
  if (st != BP_OK) return st;
  int version = 0, count = gpu_device_count();
  nccl.ncclGetVersion(&version);
  if (count == 0) {
    nccl_host->set_error("no " VENDOR_DEVICE " device (the runtime found none, or failed to start)");
    return BP_ERR_UNAVAILABLE;
  }
  snprintf(info->library, sizeof info->library, VENDOR_LIBRARY " %d.%d.%d", version / 10000,
           version / 100 % 100, version % 100);
  info->memory_kinds = BP_COMM_MEMORY_BIT(VENDOR_MEMORY);
  info->reduce_dtypes = (1u << BP_DTYPE_COUNT) - 1;
  info->score_hint = 20;
  info->launched_rank = env_int("OMPI_COMM_WORLD_RANK", "RANK");
  info->launched_size = env_int("OMPI_COMM_WORLD_SIZE", "WORLD_SIZE");
  snprintf(info->description, sizeof info->description,
           VENDOR_DEVICE " device memory on %d device(s); rendezvous: bootstrap \"file:PATH\" or "
           VENDOR_ID_FILE_ENV,
           count);
  return BP_OK;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Rank 0 publishes the id at path; the others read it, waiting for it. */
static bp_status_t rendezvous(const char *path, int rank, uint32_t timeout_ms, ncclUniqueId *id) {
  if (rank == 0) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(id, sizeof *id, 1, f) == 1;
    if (f) ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
      nccl_host->set_error("cannot write the NCCL id to %s", path);
      return BP_ERR_UNAVAILABLE;
    }
    return BP_OK;
  }
  for (double deadline = now_ms() + timeout_ms;;) {
    FILE *f = fopen(path, "rb");
    bool ok = f && fread(id, sizeof *id, 1, f) == 1;
    if (f) fclose(f);
    if (ok) return BP_OK;
    if (timeout_ms && now_ms() > deadline) {
      nccl_host->set_error("rank 0 did not publish the NCCL id at %s within %u ms", path, timeout_ms);
      return BP_ERR_TIMEOUT;
    }
    struct timespec ts = {0, 10000000L};
    nanosleep(&ts, NULL);
  }
}

static bp_status_t find_ranks(const bp_comm_config_t *cfg, int *rank, int *size, const char **path) {
  *size = cfg->size > 0 ? cfg->size : env_int("OMPI_COMM_WORLD_SIZE", "WORLD_SIZE");
  *rank = cfg->size > 0 ? cfg->rank : env_int("OMPI_COMM_WORLD_RANK", "RANK");
  if (*size <= 0) *size = 1, *rank = 0;
  *path = cfg->bootstrap && !strncmp(cfg->bootstrap, "file:", 5) ? cfg->bootstrap + 5
                                                                   : nccl_host->getenv(VENDOR_ID_FILE_ENV);
  if (*rank < 0 || *rank >= *size) {
    nccl_host->set_error("rank %d is not in 0..%d", *rank, *size - 1);
    return BP_ERR_INVALID_ARGUMENT;
  }
  if (*size > 1 && (!*path || !(*path)[0])) {
    nccl_host->set_error("%d ranks need a rendezvous for " VENDOR_LIBRARY "'s id: bootstrap \"file:PATH\" or "
                         VENDOR_ID_FILE_ENV " (a fresh path per job)", *size);
    return BP_ERR_INVALID_ARGUMENT;
  }
  return BP_OK;
}

static bp_status_t open_context(const bp_comm_config_t *cfg, nccl_comm_t *c) {
  if (cfg->memory != VENDOR_MEMORY) {
    nccl_host->set_error(VENDOR_LIBRARY " is given " VENDOR_DEVICE " device memory only");
    return BP_ERR_UNSUPPORTED;
  }
  return gpu_attach(&c->gpu, cfg->device_ordinal < 0 ? 0 : cfg->device_ordinal);
}

static bp_status_t nccl_comm_create(const bp_comm_config_t *cfg, bp_plugin_comm_t **out, int32_t *out_rank,
                                    int32_t *out_size) {
  int rank, size;
  const char *path;
  bp_status_t st = nccl_lib_open();
  if (st == BP_OK) st = find_ranks(cfg, &rank, &size, &path);
  if (st != BP_OK) return st;
  nccl_comm_t *c = calloc(1, sizeof *c);
  if (!c) return BP_ERR_OUT_OF_MEMORY;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if ((st = open_context(cfg, c)) == BP_OK && rank == 0 && nccl.ncclGetUniqueId(&id) != ncclSuccess) {
    nccl_host->set_error("ncclGetUniqueId failed");
    st = BP_ERR_UNAVAILABLE;
  }
  if (st == BP_OK && size > 1) st = rendezvous(path, rank, cfg->timeout_ms, &id);
  if (st == BP_OK) {
    gpu_enter(&c->gpu);
    ncclResult_t r = nccl.ncclCommInitRank(&c->comm, size, id, rank);
    gpu_leave(&c->gpu);
    if (r != ncclSuccess) st = nccl_failed(NULL, "ncclCommInitRank", r);
  }
  if (st != BP_OK) {
    gpu_detach(&c->gpu);
    free(c);
    return st;
  }
  c->rank = rank;
  c->size = size;
  *out = c;
  *out_rank = rank;
  *out_size = size;
  return BP_OK;
}

static void nccl_comm_destroy(bp_plugin_comm_t *c) {
  /* An aborted communicator is already freed by NCCL; a broken one is
   * aborted, since destroying it would wait for its peers. */
  if (c->comm && !c->aborted) (c->broken ? nccl.ncclCommAbort : nccl.ncclCommDestroy)(c->comm);
  gpu_detach(&c->gpu);
  free(c);
}

BP_PLUGIN_EXPORT const bp_comm_descriptor_t bp_comm_descriptor = {
    .magic = BP_COMM_MAGIC,
    .abi_major = BP_COMM_ABI_MAJOR,
    .abi_minor = BP_COMM_ABI_MINOR,
    .struct_size = sizeof(bp_comm_descriptor_t),
    .name = VENDOR_NAME,
    .version = "0.1.0",
    .description = "collectives on " VENDOR_DEVICE " memory through " VENDOR_LIBRARY " (" VENDOR_SONAME
                   ", opened at run time)",
    .init = nccl_init_plugin,
    .shutdown = nccl_shutdown_plugin,
    .probe = nccl_probe,
    .comm_create = nccl_comm_create,
    .comm_destroy = nccl_comm_destroy,
    .all_reduce = nccl_all_reduce,
    .all_gather = nccl_all_gather,
    .reduce_scatter = nccl_reduce_scatter,
    .broadcast = nccl_broadcast,
    .reduce = nccl_reduce,
    .send = nccl_send,
    .recv = nccl_recv,
    .barrier = nccl_barrier,
    .complete = nccl_complete,
};
