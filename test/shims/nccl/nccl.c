/*
 * test/shims/nccl/nccl.c — a test-only libnccl.so.2 on the CPU, for CI
 * runs of comm-nccl.so over the CUDA driver shim (whose "device" pointers
 * are host pointers and whose streams run synchronously). Ranks are
 * processes on one host: ncclCommInitRank maps a POSIX shared memory
 * segment named after the unique id, with one staging slot per rank for
 * collectives and one mailbox per ordered pair for send/recv. Every call
 * runs to completion before it returns (so the stream has nothing left to
 * do), in chunks: each rank copies its part into its slot, a barrier,
 * each computes its result from the slots, a barrier. A peer that never
 * arrives makes the call fail after BP_NCCL_SHIM_TIMEOUT_MS (default
 * 30000) with ncclRemoteError, also reported by ncclCommGetAsyncError —
 * where real NCCL would leave its kernel waiting until ncclCommAbort.
 * Reductions go through double: exact for the values the tests use.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kernels/common/bp_half.h"
#include "plugins/comm-nccl/nccl_api.h"

#define EXPORT __attribute__((visibility("default")))
#define SLOT_BYTES (4u << 20)
#define BOX_BYTES (256u << 10)
#define MAX_RANKS 16

typedef struct shared {
  atomic_uint joined, arrived, generation;
} shared_t;

typedef struct mailbox {
  atomic_ullong len; /* bytes waiting in data, 0: empty */
  unsigned char data[BOX_BYTES];
} mailbox_t;

struct ncclComm {
  int rank, nranks;
  shared_t *sh;
  unsigned char *slots; /* nranks x SLOT_BYTES */
  mailbox_t *boxes;     /* nranks x nranks, [from][to] */
  size_t bytes;
  ncclResult_t async;
};

static unsigned counter;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double timeout_ms(void) {
  const char *v = getenv("BP_NCCL_SHIM_TIMEOUT_MS");
  return v && atof(v) > 0 ? atof(v) : 30000;
}

/* Yields, then sleeps longer and longer; false once the deadline passed. */
static bool keep_waiting(double deadline, int *tries) {
  if (now_ms() > deadline) return false;
  if ((*tries)++ < 1000) {
    sched_yield();
  } else {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  return true;
}

static bool barrier(ncclComm_t c) {
  unsigned gen = atomic_load(&c->sh->generation);
  if (atomic_fetch_add(&c->sh->arrived, 1) + 1 == (unsigned)c->nranks) {
    atomic_store(&c->sh->arrived, 0);
    atomic_fetch_add(&c->sh->generation, 1);
    return true;
  }
  double deadline = now_ms() + timeout_ms();
  for (int tries = 0; atomic_load(&c->sh->generation) == gen;)
    if (!keep_waiting(deadline, &tries)) return false;
  return true;
}

static ncclResult_t lost(ncclComm_t c) {
  c->async = ncclRemoteError;
  return ncclRemoteError;
}

static size_t type_size(ncclDataType_t t) {
  switch (t) {
  case ncclInt8: case ncclUint8: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  default: return 8;
  }
}

static double get(const void *p, ncclDataType_t t, size_t i) {
  switch (t) {
  case ncclInt8: return ((const int8_t *)p)[i];
  case ncclUint8: return ((const uint8_t *)p)[i];
  case ncclInt32: return ((const int32_t *)p)[i];
  case ncclUint32: return ((const uint32_t *)p)[i];
  case ncclInt64: return (double)((const int64_t *)p)[i];
  case ncclUint64: return (double)((const uint64_t *)p)[i];
  case ncclFloat16: return bp_f16_to_f64(((const uint16_t *)p)[i]);
  case ncclBfloat16: return bp_bf16_to_f64(((const uint16_t *)p)[i]);
  case ncclFloat32: return ((const float *)p)[i];
  default: return ((const double *)p)[i];
  }
}

static void put(void *p, ncclDataType_t t, size_t i, double v) {
  switch (t) {
  case ncclInt8: ((int8_t *)p)[i] = (int8_t)v; break;
  case ncclUint8: ((uint8_t *)p)[i] = (uint8_t)(int64_t)v; break;
  case ncclInt32: ((int32_t *)p)[i] = (int32_t)v; break;
  case ncclUint32: ((uint32_t *)p)[i] = (uint32_t)v; break;
  case ncclInt64: ((int64_t *)p)[i] = (int64_t)v; break;
  case ncclUint64: ((uint64_t *)p)[i] = (uint64_t)v; break;
  case ncclFloat16: ((uint16_t *)p)[i] = bp_f64_to_f16(v); break;
  case ncclBfloat16: ((uint16_t *)p)[i] = bp_f64_to_bf16(v); break;
  case ncclFloat32: ((float *)p)[i] = (float)v; break;
  default: ((double *)p)[i] = v; break;
  }
}

static bool integer(ncclDataType_t t) { return t <= ncclUint64; }

/* out[i] = op over ranks of block b (elements at + i) of every slot. */
static void combine(ncclComm_t c, size_t at, size_t n, ncclDataType_t t, ncclRedOp_t op, void *out) {
  size_t es = type_size(t);
  for (size_t i = 0; i < n; i++) {
    double acc = get(c->slots, t, at + i);
    for (int r = 1; r < c->nranks; r++) {
      double v = get(c->slots + (size_t)r * SLOT_BYTES, t, at + i);
      acc = op == ncclProd ? acc * v : op == ncclMax ? (v > acc ? v : acc) : op == ncclMin ? (v < acc ? v : acc)
                                                                            : acc + v;
    }
    if (op == ncclAvg) acc = integer(t) ? (double)((int64_t)acc / c->nranks) : acc / c->nranks;
    if (t == ncclUint8 && op != ncclAvg) acc = (double)((uint64_t)(int64_t)acc & 0xff); /* wraps as NCCL's */
    put(out, t, i, acc);
  }
  (void)es;
}

static unsigned char *slot(ncclComm_t c, int r) { return c->slots + (size_t)r * SLOT_BYTES; }

/* Reduces to every rank (root < 0) or to root alone. */
static ncclResult_t reduce_to(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root,
                              ncclComm_t c) {
  size_t es = type_size(t), chunk = SLOT_BYTES / es;
  for (size_t off = 0; off < n || off == 0; off += chunk) {
    size_t k = n - off < chunk ? n - off : chunk;
    if (k) memcpy(slot(c, c->rank), (const char *)s + off * es, k * es);
    if (!barrier(c)) return lost(c);
    if (k && (root < 0 || root == c->rank)) combine(c, 0, k, t, op, (char *)r + off * es);
    if (!barrier(c)) return lost(c);
    if (n == 0) break;
  }
  return ncclSuccess;
}

EXPORT ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                                  cudaStream_t st) {
  (void)st;
  return reduce_to(s, r, n, t, op, -1, c);
}

EXPORT ncclResult_t ncclReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root,
                               ncclComm_t c, cudaStream_t st) {
  (void)st;
  return root < 0 || root >= c->nranks ? ncclInvalidArgument : reduce_to(s, r, n, t, op, root, c);
}

EXPORT ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                                  cudaStream_t st) {
  (void)st;
  if (root < 0 || root >= c->nranks) return ncclInvalidArgument;
  size_t es = type_size(t), chunk = SLOT_BYTES / es;
  for (size_t off = 0; off < n || off == 0; off += chunk) {
    size_t k = n - off < chunk ? n - off : chunk;
    if (k && c->rank == root) memcpy(slot(c, root), (const char *)s + off * es, k * es);
    if (!barrier(c)) return lost(c);
    if (k) memmove((char *)r + off * es, slot(c, root), k * es);
    if (!barrier(c)) return lost(c);
    if (n == 0) break;
  }
  return ncclSuccess;
}

EXPORT ncclResult_t ncclAllGather(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t c,
                                  cudaStream_t st) {
  (void)st;
  size_t es = type_size(t), chunk = SLOT_BYTES / es;
  for (size_t off = 0; off < n || off == 0; off += chunk) {
    size_t k = n - off < chunk ? n - off : chunk;
    if (k) memmove(slot(c, c->rank), (const char *)s + off * es, k * es);
    if (!barrier(c)) return lost(c);
    for (int q = 0; k && q < c->nranks; q++) memmove((char *)r + ((size_t)q * n + off) * es, slot(c, q), k * es);
    if (!barrier(c)) return lost(c);
    if (n == 0) break;
  }
  return ncclSuccess;
}

EXPORT ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                                      ncclComm_t c, cudaStream_t st) {
  (void)st;
  size_t es = type_size(t), chunk = SLOT_BYTES / es / (size_t)c->nranks;
  for (size_t off = 0; off < n || off == 0; off += chunk) {
    size_t k = n - off < chunk ? n - off : chunk;
    for (int b = 0; k && b < c->nranks; b++) /* slot: [block][k] */
      memcpy(slot(c, c->rank) + (size_t)b * k * es, (const char *)s + ((size_t)b * n + off) * es, k * es);
    if (!barrier(c)) return lost(c);
    if (k) combine(c, (size_t)c->rank * k, k, t, op, (char *)r + off * es);
    if (!barrier(c)) return lost(c);
    if (n == 0) break;
  }
  return ncclSuccess;
}

static mailbox_t *box(ncclComm_t c, int from, int to) { return &c->boxes[(size_t)from * c->nranks + to]; }

EXPORT ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  (void)st;
  if (peer < 0 || peer >= c->nranks) return ncclInvalidArgument;
  mailbox_t *m = box(c, c->rank, peer);
  size_t bytes = n * type_size(t);
  for (size_t off = 0; off < bytes;) {
    double deadline = now_ms() + timeout_ms();
    for (int tries = 0; atomic_load(&m->len) != 0;)
      if (!keep_waiting(deadline, &tries)) return lost(c);
    size_t k = bytes - off < BOX_BYTES ? bytes - off : BOX_BYTES;
    memcpy(m->data, (const char *)s + off, k);
    atomic_store(&m->len, k);
    off += k;
  }
  return ncclSuccess;
}

EXPORT ncclResult_t ncclRecv(void *r, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  (void)st;
  if (peer < 0 || peer >= c->nranks) return ncclInvalidArgument;
  mailbox_t *m = box(c, peer, c->rank);
  size_t bytes = n * type_size(t);
  for (size_t off = 0; off < bytes;) {
    double deadline = now_ms() + timeout_ms();
    for (int tries = 0; atomic_load(&m->len) == 0;)
      if (!keep_waiting(deadline, &tries)) return lost(c);
    size_t k = atomic_load(&m->len);
    if (k > bytes - off) k = bytes - off; /* a longer send: the rest is dropped, as a truncation */
    memcpy((char *)r + off, m->data, k);
    atomic_store(&m->len, 0);
    off += k;
  }
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGetVersion(int *version) {
  *version = 22703; /* the API of NCCL 2.27.3, whose nccl.h this follows */
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "/bpnccl-%d-%ld-%u", (int)getpid(), (long)time(NULL), counter++);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank) {
  *out = NULL;
  if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks || id.internal[0] != '/')
    return ncclInvalidArgument;
  ncclComm_t c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->rank = rank;
  c->nranks = nranks;
  c->bytes = 64 + (size_t)nranks * SLOT_BYTES + (size_t)nranks * nranks * sizeof(mailbox_t);
  id.internal[NCCL_UNIQUE_ID_BYTES - 1] = '\0';
  int fd = shm_open(id.internal, O_CREAT | O_RDWR, 0600);
  void *p = fd >= 0 && ftruncate(fd, (off_t)c->bytes) == 0
                ? mmap(NULL, c->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (fd >= 0) close(fd);
  if (p == MAP_FAILED) {
    free(c);
    return ncclSystemError;
  }
  c->sh = p;
  c->slots = (unsigned char *)p + 64;
  c->boxes = (mailbox_t *)(c->slots + (size_t)nranks * SLOT_BYTES);
  atomic_fetch_add(&c->sh->joined, 1);
  double deadline = now_ms() + timeout_ms();
  bool all = true;
  for (int tries = 0; all && atomic_load(&c->sh->joined) < (unsigned)nranks;) all = keep_waiting(deadline, &tries);
  if (!all || !barrier(c)) {
    munmap(p, c->bytes);
    free(c);
    return ncclRemoteError;
  }
  if (rank == 0) shm_unlink(id.internal); /* everyone has it mapped */
  *out = c;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t c) {
  if (!c) return ncclInvalidArgument;
  munmap(c->sh, c->bytes);
  free(c);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t c) { return ncclCommDestroy(c); }

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *err) {
  *err = c ? c->async : ncclInvalidArgument;
  return ncclSuccess;
}

EXPORT const char *ncclGetErrorString(ncclResult_t r) {
  static const char *const names[] = {"no error", "unhandled cuda error", "unhandled system error",
                                      "internal error", "invalid argument", "invalid usage", "remote process exited "
                                      "or there was a network error", "NCCL operation in progress"};
  return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "unknown result code";
}
