/*
 * heap.h — the "device" memory of the CPU shims (test/shims/cuda and
 * test/shims/hip), written once: host RAM, 256-byte aligned as the drivers
 * guarantee, filled with garbage on allocation as real fresh memory may be,
 * every live block remembered so that copies and kernels can be checked to
 * stay inside one (shim_mem_valid / shim_mem_find, which the shared C
 * kernels of test/shims/cuda/kernels.c call for every access).
 */
#ifndef BP_SHIM_HEAP_H
#define BP_SHIM_HEAP_H

#include <stdbool.h>
#include <stdint.h>

/* Allocates size bytes (> 0) unless that would take the bytes in use past
 * limit; false (and *out 0) when out of memory. */
bool shim_heap_alloc(uint64_t size, uint64_t limit, uint64_t *out);
/* Frees the block at p; false, after a report naming fn, when p is not one
 * (a double free). */
bool shim_heap_free(uint64_t p, const char *fn);
/* Live blocks and the bytes they hold. */
void shim_heap_usage(int64_t *out_blocks, int64_t *out_bytes);

/* True when [p, p + bytes) lies inside one live block; reports (naming
 * what) and returns false otherwise. The last block hit is cached per
 * thread until the next free, which keeps the op suites fast. */
bool shim_mem_valid(uint64_t p, uint64_t bytes, const char *what);
/* Like shim_mem_valid, also giving the block's [lo, hi) so a kernel can
 * check later accesses without the lock (nothing is freed during a launch). */
bool shim_mem_find(uint64_t p, uint64_t bytes, const char *what,
                   uint64_t *out_lo, uint64_t *out_hi);
/* Reports a plugin bug the shim caught on stderr, prefixed with the shim's
 * name (each shim defines it). */
void shim_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* BP_SHIM_HEAP_H */
