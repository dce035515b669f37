/*
 * comm_bench.c — bp comm-bench: all-reduce through a backplane
 * communicator, beside raw MPI_Allreduce on the same memory in the same
 * run, one line per message size. Run under mpirun (every rank runs it;
 * rank 0 prints). Bus bandwidth follows nccl-tests: algbw = bytes / time,
 * busbw = algbw * 2 (n - 1) / n, the time being the slowest rank's average.
 * Three columns: backplane with the call check (the header exchange of
 * docs/scale-out.md), backplane without it, and MPI itself, which bp
 * reaches the way the plugin does (dlopen of libmpi.so.40, already
 * initialised by the plugin), so bp needs no MPI at build time either.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bp.h"

typedef int (*mpi_allreduce_fn)(const void *, void *, int, void *, void *, void *);
typedef int (*mpi_barrier_fn)(void *);

typedef struct raw_mpi {
  mpi_allreduce_fn allreduce;
  mpi_barrier_fn barrier;
  void *world, *t_float, *t_double, *op_sum, *op_max;
} raw_mpi_t;

#define MAX_REPS 1000

typedef struct opts {
  const char *device;
  uint64_t min_bytes, max_bytes, iters, warmup, reps;
  bpt_context_flags_t ctx;
} opts_t;

static void help(FILE *f) {
  fprintf(f,
          "usage: bp comm-bench [--device SEL] [--min-bytes N] [--max-bytes N]\n"
          "                     [--iters N] [--warmup N] [--reps N] [--no-isolate]\n\n"
          "All-reduce (f32, sum, in place) through a backplane communicator, with and\n"
          "without the call check, beside raw MPI_Allreduce on the same memory, for\n"
          "message sizes from --min-bytes to --max-bytes (x4 each step). Run it under\n"
          "mpirun: mpirun -np 4 bp comm-bench. Rank 0 prints time per call (the\n"
          "slowest rank's average, microseconds) and bus bandwidth (nccl-tests'\n"
          "definition, GB/s), and the overhead over MPI.\n\n"
          "  --device SEL   device whose buffers are used (default cpu: host memory,\n"
          "                 so MPI can be handed the same bytes)\n"
          "  --min-bytes N  smallest message (default 8)\n"
          "  --max-bytes N  largest message (default 16777216)\n"
          "  --iters N      timed calls per size (default 20)\n"
          "  --warmup N     untimed calls first (default 5)\n"
          "  --reps N       time the three columns N times in turn, print the medians\n"
          "                 and the median of the per-turn overheads (default 1); on\n"
          "                 a loaded machine the turns' ratios are steadier than times\n"
          "  --no-isolate   probe plugins in this process instead of a child\n\n"
          "Exit status: 0 when every call succeeded; 1 otherwise.\n");
}

static int parse(int argc, char **argv, opts_t *o) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},          {"device", required_argument, NULL, 'd'},
      {"min-bytes", required_argument, NULL, 'a'}, {"max-bytes", required_argument, NULL, 'b'},
      {"iters", required_argument, NULL, 'i'},   {"warmup", required_argument, NULL, 'w'},
      {"reps", required_argument, NULL, 'r'},    {"no-isolate", no_argument, NULL, 'n'},
      {NULL, 0, NULL, 0}};
  bool started = false;
  unsigned long long n;
  for (int c; (c = bpt_getopt("comm-bench", argc, argv, "hd:", longopts, &started)) != -1;) {
    switch (c) {
    case 'h': help(stdout); return -1;
    case 'd': o->device = optarg; break;
    case 'n': o->ctx.no_isolate = true; break;
    case 'a': case 'b': case 'i': case 'w': case 'r': {
      const char *name = c == 'a' ? "--min-bytes" : c == 'b' ? "--max-bytes" : c == 'i' ? "--iters"
                         : c == 'w' ? "--warmup" : "--reps";
      if (!bpt_parse_count("comm-bench", name, optarg, c == 'w' ? 0 : 1, c == 'r' ? MAX_REPS : 1ull << 40, &n))
        return BPT_EXIT_USAGE;
      *(c == 'a' ? &o->min_bytes : c == 'b' ? &o->max_bytes : c == 'i' ? &o->iters : c == 'w' ? &o->warmup
        : &o->reps) = n;
      break;
    }
    default: help(stderr); return BPT_EXIT_USAGE;
    }
  }
  if (optind < argc || o->min_bytes > o->max_bytes) {
    fprintf(stderr, "bp comm-bench: %s\n", optind < argc ? "unexpected argument" : "--min-bytes > --max-bytes");
    return BPT_EXIT_USAGE;
  }
  return 0;
}

static bool open_raw_mpi(raw_mpi_t *m) {
  const char *env = getenv("BACKPLANE_MPI_LIBRARY");
  void *dl = dlopen(env && env[0] ? env : "libmpi.so.40", RTLD_NOW | RTLD_GLOBAL);
  if (!dl) return false;
  *(void **)&m->allreduce = dlsym(dl, "MPI_Allreduce");
  *(void **)&m->barrier = dlsym(dl, "MPI_Barrier");
  m->world = dlsym(dl, "ompi_mpi_comm_world");
  m->t_float = dlsym(dl, "ompi_mpi_float");
  m->t_double = dlsym(dl, "ompi_mpi_double");
  m->op_sum = dlsym(dl, "ompi_mpi_op_sum");
  m->op_max = dlsym(dl, "ompi_mpi_op_max");
  return m->allreduce && m->barrier && m->world && m->t_float && m->t_double && m->op_sum && m->op_max;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The host address of a CPU buffer, through DLPack (whose DLTensor starts
 * with the data pointer); NULL for memory that is not host memory. */
static void *host_pointer(bp_buffer_t *b, uint64_t bytes, void **out_managed) {
  bp_tensor_t t;
  int64_t shape[1] = {(int64_t)bytes};
  *out_managed = NULL;
  if (bp_tensor_init(b, 0, BP_U8, 1, shape, NULL, &t) != BP_OK) return NULL;
  if (bp_tensor_to_dlpack(&t, false, out_managed) != BP_OK) return NULL;
  return *(void **)*out_managed;
}

static void release_managed(void *managed) {
  typedef struct { void *data; int32_t dev[2]; int32_t ndim; uint8_t dt[4]; int64_t *shape, *strides;
                   uint64_t offset; void *ctx; void (*deleter)(void *); } dl_managed_t;
  if (managed && ((dl_managed_t *)managed)->deleter) ((dl_managed_t *)managed)->deleter(managed);
}

/* Average microseconds per all-reduce over iters, the slowest rank's. The
 * calls are queued on the stream (docs/scale-out.md); the time runs until
 * the stream has finished them all. */
static double time_bp(bp_comm_t *comm, bp_stream_t *s, bp_buffer_t *b, uint64_t count, const opts_t *o,
                      bool *ok) {
  double t0 = 0;
  for (uint64_t i = 0; i < o->warmup + o->iters; i++) {
    if (i == o->warmup) {
      *ok &= bp_comm_barrier(comm, s) == BP_OK;
      *ok &= bp_stream_synchronize(s) == BP_OK;
      t0 = now_us();
    }
    *ok &= bp_comm_all_reduce(comm, s, b, 0, b, 0, count, BP_F32, BP_COMM_SUM) == BP_OK;
  }
  *ok &= bp_stream_synchronize(s) == BP_OK;
  return (now_us() - t0) / (double)o->iters;
}

static double time_mpi(const raw_mpi_t *m, void *data, uint64_t count, const opts_t *o) {
  double t0 = 0;
  for (uint64_t i = 0; i < o->warmup + o->iters; i++) {
    if (i == o->warmup) {
      m->barrier(m->world);
      t0 = now_us();
    }
    m->allreduce((void *)1 /* MPI_IN_PLACE */, data, (int)count, m->t_float, m->op_sum, m->world);
  }
  return (now_us() - t0) / (double)o->iters;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of v[0 .. n - 1] (reordered). */
static double median(double *v, uint64_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double busbw_gbs(uint64_t bytes, double us, int size) {
  return us > 0 ? (double)bytes / (us * 1e3) * 2.0 * (size - 1) / size : 0;
}

typedef struct run {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  bp_comm_t *checked, *unchecked;
} run_t;

static bool run_sizes(run_t *r, const raw_mpi_t *m, const opts_t *o, int rank, int size) {
  bool ok = true;
  if (rank == 0)
    printf("%12s %12s %10s %12s %10s %12s %10s %10s %9s\n", "bytes", "bp_us", "bp_busbw", "bp_nochk_us",
           "nochk_bw", "mpi_us", "mpi_busbw", "overhead", "added_us");
  for (uint64_t bytes = o->min_bytes; bytes <= o->max_bytes && ok; bytes *= 4) {
    uint64_t count = bytes / 4 ? bytes / 4 : 1, nbytes = count * 4;
    bp_buffer_t *b = NULL;
    void *managed = NULL, *data = NULL;
    ok = bp_buffer_alloc(r->dev, nbytes, &b) == BP_OK && (data = host_pointer(b, nbytes, &managed));
    if (!ok) break;
    memset(data, 0, nbytes); /* zeros stay zeros however often they are summed */
    double t[3], col[5][MAX_REPS];
    for (uint64_t rep = 0; rep < o->reps; rep++) {
      t[0] = time_bp(r->checked, r->s, b, count, o, &ok);
      t[1] = time_bp(r->unchecked, r->s, b, count, o, &ok);
      t[2] = time_mpi(m, data, count, o);
      m->allreduce((void *)1, t, 3, m->t_double, m->op_max, m->world);
      for (int k = 0; k < 3; k++) col[k][rep] = t[k];
      col[3][rep] = (t[1] / t[2] - 1) * 100; /* each turn's own overhead */
      col[4][rep] = t[1] - t[2];
    }
    double med[5];
    for (int k = 0; k < 5; k++) med[k] = median(col[k], o->reps);
    if (rank == 0)
      printf("%12llu %12.2f %10.3f %12.2f %10.3f %12.2f %10.3f %9.1f%% %9.2f\n", (unsigned long long)nbytes, med[0],
             busbw_gbs(nbytes, med[0], size), med[1], busbw_gbs(nbytes, med[1], size), med[2],
             busbw_gbs(nbytes, med[2], size), med[3], med[4]);
    release_managed(managed);
    bp_buffer_free(b);
  }
  if (!ok) fprintf(stderr, "bp comm-bench: rank %d: %s\n", rank, bp_last_error());
  return ok;
}

int bp_cmd_comm_bench(int argc, char **argv) {
  opts_t o = {.device = "cpu", .min_bytes = 8, .max_bytes = 16u << 20, .iters = 20, .warmup = 5, .reps = 1};
  int rc = parse(argc, argv, &o);
  if (rc) return rc < 0 ? BPT_EXIT_OK : rc;
  run_t r = {0};
  if (!(r.ctx = bpt_context_open(&o.ctx))) return BPT_EXIT_FAIL;
  bp_comm_options_t co = {.struct_size = sizeof co, .plugin = "mpi"};
  bp_comm_options_t cn = co;
  cn.no_call_check = true;
  raw_mpi_t m;
  int32_t rank = 0, size = 0;
  bool ok = bp_device_open(r.ctx, o.device, NULL, &r.dev) == BP_OK && bp_stream_create(r.dev, &r.s) == BP_OK &&
            bp_comm_create(r.dev, &co, &r.checked) == BP_OK && bp_comm_create(r.dev, &cn, &r.unchecked) == BP_OK;
  if (!ok) fprintf(stderr, "bp comm-bench: %s\n", bp_last_error());
  if (ok && !(ok = open_raw_mpi(&m))) fprintf(stderr, "bp comm-bench: cannot reach MPI_Allreduce in libmpi\n");
  if (ok) {
    bp_comm_rank(r.checked, &rank);
    bp_comm_size(r.checked, &size);
    if (rank == 0) printf("comm-bench: %d ranks, device %s, f32 sum in place, %llu iterations, %llu turns\n", size,
                          o.device, (unsigned long long)o.iters, (unsigned long long)o.reps);
    ok = run_sizes(&r, &m, &o, rank, size);
  }
  bp_comm_destroy(r.unchecked);
  bp_comm_destroy(r.checked);
  bp_stream_destroy(r.s);
  bp_device_close(r.dev);
  bp_context_destroy(r.ctx);
  return ok ? BPT_EXIT_OK : BPT_EXIT_FAIL;
}
