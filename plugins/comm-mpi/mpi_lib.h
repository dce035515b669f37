/*
 * mpi_lib.h — the part of Open MPI's ABI (libmpi.so.40, Open MPI 3.x-5.x)
 * this plugin uses, declared here so that it builds without MPI headers.
 * In Open MPI the handle types are pointers to library objects, and the
 * predefined handles (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...) are the
 * addresses of exported globals (ompi_mpi_comm_world, ompi_mpi_float,
 * ompi_mpi_op_sum): mpi_lib.c resolves them with dlsym. Other MPI
 * implementations (MPICH's integer handles) have another ABI and are
 * refused at probe by the missing ompi_ symbols.
 */
#ifndef BP_COMM_MPI_LIB_H
#define BP_COMM_MPI_LIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "comm-api.h"

typedef void *MPI_Comm;
typedef void *MPI_Datatype;
typedef void *MPI_Op;
typedef void *MPI_Request;
typedef void *MPI_Errhandler;
/* Open MPI's struct ompi_status_public_t. */
typedef struct {
  int MPI_SOURCE, MPI_TAG, MPI_ERROR, _cancelled;
  size_t _ucount;
} MPI_Status;

#define MPI_SUCCESS 0
#define MPI_THREAD_SERIALIZED 2
#define MPI_IN_PLACE ((void *)1)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)
#define MPI_UNDEFINED (-32766)
#define MPI_MAX_ERROR_STRING 256
#define MPI_MAX_LIBRARY_VERSION_STRING 256

/* The functions, each under its MPI name, so grep finds them. */
#define MPI_FUNCTIONS(X)                                                                         \
  X(int, MPI_Initialized, (int *flag))                                                          \
  X(int, MPI_Finalized, (int *flag))                                                            \
  X(int, MPI_Init_thread, (int *argc, char ***argv, int required, int *provided))               \
  X(int, MPI_Finalize, (void))                                                                  \
  X(int, MPI_Get_library_version, (char *version, int *len))                                    \
  X(int, MPI_Comm_idup, (MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *req))                    \
  X(int, MPI_Comm_free, (MPI_Comm * comm))                                                      \
  X(int, MPI_Comm_rank, (MPI_Comm comm, int *rank))                                             \
  X(int, MPI_Comm_size, (MPI_Comm comm, int *size))                                             \
  X(int, MPI_Comm_set_errhandler, (MPI_Comm comm, MPI_Errhandler eh))                            \
  X(int, MPI_Iallreduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c,  \
                          MPI_Request *req))                                                    \
  X(int, MPI_Iallgather, (const void *s, int sn, MPI_Datatype st, void *r, int rn,               \
                          MPI_Datatype rt, MPI_Comm c, MPI_Request *req))                       \
  X(int, MPI_Ireduce_scatter_block, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op,   \
                                     MPI_Comm c, MPI_Request *req))                             \
  X(int, MPI_Ibcast, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *req))  \
  X(int, MPI_Ireduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root,       \
                       MPI_Comm c, MPI_Request *req))                                           \
  X(int, MPI_Isend, (const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c,        \
                     MPI_Request *req))                                                         \
  X(int, MPI_Irecv, (void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c,               \
                     MPI_Request *req))                                                         \
  X(int, MPI_Ibarrier, (MPI_Comm c, MPI_Request *req))                                           \
  X(int, MPI_Test, (MPI_Request * req, int *flag, MPI_Status *status))                           \
  X(int, MPI_Testsome, (int n, MPI_Request *reqs, int *outcount, int *indices, MPI_Status *statuses)) \
  X(int, MPI_Cancel, (MPI_Request * req))                                                       \
  X(int, MPI_Request_free, (MPI_Request * req))                                                 \
  X(int, MPI_Error_string, (int code, char *text, int *len))

/* The predefined objects: field name, exported symbol. */
#define MPI_OBJECTS(X)                                                                           \
  X(comm_world, "ompi_mpi_comm_world")                                                           \
  X(errors_return, "ompi_mpi_errors_return")                                                     \
  X(t_float, "ompi_mpi_float")                                                                   \
  X(t_double, "ompi_mpi_double")                                                                 \
  X(t_int32, "ompi_mpi_int32_t")                                                                 \
  X(t_int64, "ompi_mpi_int64_t")                                                                 \
  X(t_uint8, "ompi_mpi_uint8_t")                                                                 \
  X(t_uint16, "ompi_mpi_uint16_t")                                                               \
  X(op_sum, "ompi_mpi_op_sum")                                                                   \
  X(op_prod, "ompi_mpi_op_prod")                                                                 \
  X(op_max, "ompi_mpi_op_max")                                                                   \
  X(op_min, "ompi_mpi_op_min")                                                                   \
  X(request_null, "ompi_request_null")

typedef struct mpi_lib {
  void *dl;
#define MPI_FN_FIELD(ret, name, params) ret(*name) params;
  MPI_FUNCTIONS(MPI_FN_FIELD)
#undef MPI_FN_FIELD
#define MPI_OBJ_FIELD(field, symbol) void *field;
  MPI_OBJECTS(MPI_OBJ_FIELD)
#undef MPI_OBJ_FIELD
} mpi_lib_t;

/* The library, opened once per process (mpi_lib.c). */
extern mpi_lib_t mpi;
/* Serialises every MPI call the plugin makes (it asks for, or accepts,
 * MPI_THREAD_SERIALIZED). */
extern pthread_mutex_t mpi_lock;
extern const bp_host_services_t *mpi_host;

/* Opens libmpi (BACKPLANE_MPI_LIBRARY, else libmpi.so.40) and resolves
 * everything above; BP_ERR_UNAVAILABLE with the reason through set_error
 * otherwise. Idempotent, thread-safe. */
bp_status_t mpi_lib_open(void);
/* "Open MPI v4.1.4" into out. */
void mpi_lib_version(char *out, size_t size);
/* MPI's message for code, as "FUNCTION: message". */
void mpi_lib_error(const char *fn, int code, char *out, size_t size);
/* Makes sure MPI is initialised: the application's, or this plugin's own
 * (MPI_Init_thread, finalised at exit unless a communicator broke). */
bp_status_t mpi_lib_ensure_init(void);
/* Tells the exit handler that a communicator broke: MPI_Finalize would wait
 * for dead peers, so it is skipped. */
void mpi_lib_note_broken(void);

/* Whether this Open MPI takes CUDA device pointers (cuda_aware.c): no, yes,
 * or not known until MPI is initialised; why says how it was decided. */
typedef enum mpi_cuda { MPI_CUDA_NO, MPI_CUDA_YES, MPI_CUDA_AT_INIT } mpi_cuda_t;
mpi_cuda_t mpi_cuda_detect(char *why, size_t size);

/* The MPI datatype moving dt (reduce: whether MPI can reduce it), NULL when
 * none (mpi_ops.c). */
MPI_Datatype mpi_datatype(bp_dtype_t dt, bool reduce);

/* One communicator. */
typedef struct bp_plugin_comm {
  MPI_Comm comm;
  int rank, size;
  bp_comm_memory_t memory; /* host, or CUDA for a CUDA-aware MPI */
  bool broken;
  /* The ring (ring.c): messages from ring_min_bytes (UINT64_MAX: never)
   * take it, in segments of ring_segment_bytes; its scratch is kept
   * between calls (and left to MPI once the communicator broke). */
  uint64_t ring_min_bytes, ring_segment_bytes;
  char *ring_scratch;
  size_t ring_scratch_size;
} mpi_comm_t;

/* The collectives (mpi_ops.c). */
bp_status_t mpi_all_reduce(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t mpi_all_gather(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t mpi_reduce_scatter(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t mpi_broadcast(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t mpi_reduce(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t mpi_send(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t mpi_recv(bp_plugin_comm_t *c, const bp_comm_args_t *a);
bp_status_t mpi_barrier(bp_plugin_comm_t *c, const bp_comm_args_t *a);
/* Waits for req until timeout_ms (0: forever); on a timeout or an error
 * marks c broken (c may be NULL while creating). what names the call
 * (mpi_wait.c). */
bp_status_t mpi_wait(mpi_comm_t *c, MPI_Request *req, uint32_t timeout_ms, const char *what);
/* MPI's error rc from fn, or a timeout of what: either breaks c. */
bp_status_t mpi_failed(mpi_comm_t *c, const char *fn, int rc);
bp_status_t mpi_timed_out(mpi_comm_t *c, const char *what, uint32_t timeout_ms);
double mpi_now_ms(void);
/* The pause between two polls that found nothing done: spins (yielding)
 * first, then sleeps longer and longer; zero it again after progress. */
typedef struct mpi_backoff {
  int tries;
  long sleep_ns;
} mpi_backoff_t;
void mpi_backoff(mpi_backoff_t *b);

/* Whether a reducing call of elements in all takes the ring: host memory,
 * more than one rank, at least ring_min_bytes (ring.c). */
bool mpi_ring_wanted(const mpi_comm_t *c, const bp_comm_args_t *a, uint64_t elements);
/* All-reduce (scatter false) or reduce-scatter (true) of a as a segmented
 * ring over MPI_Isend / MPI_Irecv, bounded by a->timeout_ms; AVG is
 * left a sum, as from MPI. type: a->dtype's MPI datatype. */
bp_status_t mpi_ring(mpi_comm_t *c, const bp_comm_args_t *a, MPI_Datatype type, bool scatter);
/* d = x op y element-wise over n elements (y NULL: d = d op x); ranges
 * never overlap. False for a dtype or op it does not do (reduce_local.c). */
bool mpi_reduce_local(void *d, const void *x, const void *y, uint64_t n, bp_dtype_t dt, bp_comm_reduce_op_t op);

#endif /* BP_COMM_MPI_LIB_H */
