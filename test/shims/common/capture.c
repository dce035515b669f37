/*
 * capture.c — stream capture and graphs of the CPU shims (see capture.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/shims/common/capture.h"
#include "test/shims/cuda/shim.h" /* shim_kernel_run, shim_mem_valid, shim_report */

enum { NODE_KERNEL, NODE_COPY, NODE_HOST };

typedef struct shim_node {
  int kind;
  /* kernel */
  const shim_kernel_t *k;
  shim_launch_t launch;
  int count;
  uint32_t sizes[SHIM_MAX_PARAMS];
  /* copy */
  uint64_t dst, src;
  bool dst_dev, src_dev;
  size_t n;
  /* host */
  void (*fn)(void *);
  /* kernel parameters or host data, owned */
  unsigned char *blob;
  size_t blob_size;
} shim_node_t;

#define GRAPH_MAGIC 0x47524150u
#define EXEC_MAGIC 0x47455845u
struct shim_graph {
  uint32_t magic;
  int count, cap;
  shim_node_t *nodes;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
#define MAX_CAPTURES 64
static shim_stream_capture_t *active[MAX_CAPTURES]; /* under lock */
static int64_t graphs_live;
static _Thread_local int thread_mode = SHIM_MODE_GLOBAL;

int64_t shim_graphs_live(void) {
  return __atomic_load_n(&graphs_live, __ATOMIC_RELAXED);
}

static shim_graph_t *graph_new(uint32_t magic) {
  shim_graph_t *g = calloc(1, sizeof *g);
  if (g) {
    g->magic = magic;
    __atomic_add_fetch(&graphs_live, 1, __ATOMIC_RELAXED);
  }
  return g;
}

void shim_graph_free(shim_graph_t *g, const char *fn) {
  if (!g)
    return;
  if (fn && !shim_graph_ok(g, fn))
    return;
  for (int i = 0; i < g->count; i++)
    free(g->nodes[i].blob);
  free(g->nodes);
  g->magic = 0;
  free(g);
  __atomic_sub_fetch(&graphs_live, 1, __ATOMIC_RELAXED);
}

bool shim_graph_ok(const shim_graph_t *g, const char *fn) {
  if (g && (g->magic == GRAPH_MAGIC || g->magic == EXEC_MAGIC))
    return true;
  shim_report("%s: %p is not a live graph", fn, (const void *)g);
  return false;
}

int shim_capture_begin(shim_stream_capture_t *c, int mode) {
  if (mode < SHIM_MODE_GLOBAL || mode > SHIM_MODE_RELAXED)
    return SHIM_ERR_INVALID_VALUE;
  if (c->graph)
    return SHIM_ERR_ILLEGAL_STATE;
  shim_graph_t *g = graph_new(GRAPH_MAGIC);
  if (!g)
    return 2; /* out of memory */
  int r = SHIM_ERR_ILLEGAL_STATE;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_CAPTURES; i++)
    if (!active[i]) {
      active[i] = c;
      r = 0;
      break;
    }
  pthread_mutex_unlock(&lock);
  if (r) {
    shim_graph_free(g, NULL);
    return r;
  }
  c->graph = g;
  c->owner = pthread_self();
  c->mode = mode;
  c->invalidated = false;
  return 0;
}

static void unregister(shim_stream_capture_t *c) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_CAPTURES; i++)
    if (active[i] == c)
      active[i] = NULL;
  pthread_mutex_unlock(&lock);
}

int shim_capture_end(shim_stream_capture_t *c, shim_graph_t **out) {
  *out = NULL;
  if (!c->graph)
    return SHIM_ERR_ILLEGAL_STATE;
  if (c->mode != SHIM_MODE_RELAXED && !pthread_equal(c->owner, pthread_self()))
    return SHIM_ERR_CAPTURE_WRONG_THREAD;
  unregister(c);
  shim_graph_t *g = c->graph;
  c->graph = NULL;
  if (c->invalidated) {
    shim_graph_free(g, NULL);
    return SHIM_ERR_CAPTURE_INVALIDATED;
  }
  *out = g;
  return 0;
}

void shim_capture_drop(shim_stream_capture_t *c) {
  if (!c->graph)
    return;
  shim_report("a stream was destroyed while capturing");
  unregister(c);
  shim_graph_free(c->graph, NULL);
  c->graph = NULL;
}

int shim_capture_unsafe(const char *fn) {
  if (thread_mode == SHIM_MODE_RELAXED)
    return 0;
  int r = 0;
  pthread_t self = pthread_self();
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_CAPTURES; i++) {
    shim_stream_capture_t *c = active[i];
    if (!c || c->mode == SHIM_MODE_RELAXED)
      continue;
    bool mine = pthread_equal(c->owner, self);
    if (mine || (thread_mode == SHIM_MODE_GLOBAL && c->mode == SHIM_MODE_GLOBAL)) {
      r = SHIM_ERR_CAPTURE_UNSUPPORTED;
      if (mine)
        c->invalidated = true;
    }
  }
  pthread_mutex_unlock(&lock);
  if (r)
    shim_report("%s: not permitted while a stream capture is active "
                "(STREAM_CAPTURE_UNSUPPORTED)", fn);
  return r;
}

int shim_capture_legacy(const char *fn) {
  int r = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_CAPTURES; i++)
    if (active[i]) {
      active[i]->invalidated = true;
      r = SHIM_ERR_CAPTURE_IMPLICIT;
    }
  pthread_mutex_unlock(&lock);
  if (r)
    shim_report("%s: the legacy / null stream used while a blocking stream "
                "captures (STREAM_CAPTURE_IMPLICIT)", fn);
  return r;
}

int shim_capture_sync(shim_stream_capture_t *c, const char *fn) {
  if (!c || !c->graph)
    return 0;
  c->invalidated = true;
  shim_report("%s: a capturing stream cannot be synchronised "
              "(STREAM_CAPTURE_UNSUPPORTED)", fn);
  return SHIM_ERR_CAPTURE_UNSUPPORTED;
}

int shim_capture_exchange_mode(int *mode) {
  if (!mode || *mode < SHIM_MODE_GLOBAL || *mode > SHIM_MODE_RELAXED)
    return SHIM_ERR_INVALID_VALUE;
  int old = thread_mode;
  thread_mode = *mode;
  *mode = old;
  return 0;
}

static shim_node_t *add_node(shim_stream_capture_t *c, int kind) {
  shim_graph_t *g = c->graph;
  if (g->count == g->cap) {
    int cap = g->cap ? 2 * g->cap : 16;
    shim_node_t *n = realloc(g->nodes, (size_t)cap * sizeof *n);
    if (!n) {
      c->invalidated = true;
      return NULL;
    }
    g->nodes = n;
    g->cap = cap;
  }
  shim_node_t *n = &g->nodes[g->count++];
  memset(n, 0, sizeof *n);
  n->kind = kind;
  return n;
}

bool shim_capture_kernel(shim_stream_capture_t *c, const shim_kernel_t *k,
                         const void *launch, void **params, int count,
                         const uint32_t *param_sizes) {
  if (!c || !c->graph)
    return false;
  shim_node_t *n = add_node(c, NODE_KERNEL);
  if (!n)
    return true;
  n->k = k;
  memcpy(&n->launch, launch, sizeof n->launch);
  n->count = count;
  size_t total = 0;
  for (int i = 0; i < count; i++) {
    n->sizes[i] = param_sizes[i];
    total += param_sizes[i];
  }
  n->blob = malloc(total ? total : 1);
  n->blob_size = total;
  if (!n->blob) {
    c->invalidated = true;
    return true;
  }
  /* The values, not the caller's pointers: the caller's parameter blocks
   * are gone by the time the graph runs. */
  size_t off = 0;
  for (int i = 0; i < count; i++) {
    memcpy(n->blob + off, params[i], param_sizes[i]);
    off += param_sizes[i];
  }
  return true;
}

bool shim_capture_copy(shim_stream_capture_t *c, uint64_t dst, bool dst_dev,
                       uint64_t src, bool src_dev, size_t n_bytes) {
  if (!c || !c->graph)
    return false;
  shim_node_t *n = add_node(c, NODE_COPY);
  if (n) {
    n->dst = dst, n->dst_dev = dst_dev;
    n->src = src, n->src_dev = src_dev;
    n->n = n_bytes;
  }
  return true;
}

bool shim_capture_host(shim_stream_capture_t *c, void (*fn)(void *),
                       const void *data, size_t size) {
  if (!c || !c->graph)
    return false;
  shim_node_t *n = add_node(c, NODE_HOST);
  if (!n)
    return true;
  n->fn = fn;
  n->blob = malloc(size ? size : 1);
  n->blob_size = size;
  if (!n->blob)
    c->invalidated = true;
  else
    memcpy(n->blob, data, size);
  return true;
}

int shim_graph_instantiate(const shim_graph_t *g, shim_graph_t **out) {
  *out = NULL;
  if (!g || g->magic != GRAPH_MAGIC) {
    shim_report("graph instantiate: %p is not a graph", (const void *)g);
    return SHIM_ERR_INVALID_VALUE;
  }
  shim_graph_t *e = graph_new(EXEC_MAGIC);
  if (!e || (g->count && !(e->nodes = calloc((size_t)g->count, sizeof *e->nodes)))) {
    shim_graph_free(e, NULL);
    return 2;
  }
  for (int i = 0; i < g->count; i++) {
    e->nodes[i] = g->nodes[i];
    e->nodes[i].blob = NULL;
    if (g->nodes[i].blob) {
      e->nodes[i].blob = malloc(g->nodes[i].blob_size ? g->nodes[i].blob_size : 1);
      if (!e->nodes[i].blob) {
        e->count = i;
        shim_graph_free(e, NULL);
        return 2;
      }
      memcpy(e->nodes[i].blob, g->nodes[i].blob, g->nodes[i].blob_size);
    }
    e->count = i + 1;
  }
  e->cap = e->count;
  *out = e;
  return 0;
}

int shim_graph_run(const shim_graph_t *g, int illegal_address,
                   int64_t *launches) {
  if (!g || g->magic != EXEC_MAGIC) {
    shim_report("graph launch: %p is not an executable graph", (const void *)g);
    return SHIM_ERR_INVALID_VALUE;
  }
  for (int i = 0; i < g->count; i++) {
    const shim_node_t *n = &g->nodes[i];
    switch (n->kind) {
    case NODE_KERNEL: {
      void *params[SHIM_MAX_PARAMS];
      size_t off = 0;
      for (int p = 0; p < n->count; p++) {
        params[p] = n->blob + off;
        off += n->sizes[p];
      }
      __atomic_add_fetch(launches, 1, __ATOMIC_RELAXED);
      if (!shim_kernel_run(n->k, &n->launch, params))
        return illegal_address;
      break;
    }
    case NODE_COPY:
      if ((n->dst_dev && !shim_mem_valid(n->dst, n->n, "graph memcpy node")) ||
          (n->src_dev && !shim_mem_valid(n->src, n->n, "graph memcpy node")))
        return SHIM_ERR_INVALID_VALUE;
      memmove((void *)(uintptr_t)n->dst, (const void *)(uintptr_t)n->src, n->n);
      break;
    default:
      n->fn(n->blob);
      break;
    }
  }
  return 0;
}
