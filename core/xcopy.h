/*
 * xcopy.h — the core's internals for data and ordering between devices
 * (xcopy.c, xcopy_stage.c, xcopy_order.c) and the door's wrappers they use.
 * bp__copy_across itself is declared in internal.h, for every caller.
 */
#ifndef BACKPLANE_XCOPY_H
#define BACKPLANE_XCOPY_H

#include "internal.h"

/* Host mapping of device memory (ABI 1.4, optional as a pair; plugin_call.c):
 * whether d's plugin offers it. map answers BP_ERR_UNSUPPORTED, with no
 * message set, for memory that cannot be mapped: the caller stages. */
bool bp__plugin_has_mem_map(const bp__device_t *d);
bp_status_t bp__call_mem_map(bp__device_t *d, uint64_t ptr, uint64_t off, uint64_t size,
                             uint32_t flags, void **out_host);
bp_status_t bp__call_mem_unmap(bp__device_t *d, uint64_t ptr, void *host);

/* bp__copy_across's staged form: through host memory in chunks, the read of
 * one chunk overlapping the write of the one before (xcopy_stage.c). */
bp_status_t bp__copy_staged(bp__buffer_t *dst, uint64_t doff, bp__buffer_t *src, uint64_t soff,
                            uint64_t size);
/* Frees the staging memory that d's host_alloc gave, as d closes. */
void bp__xcopy_release(bp__device_t *d);

/* Makes s wait for an event of another device: a host-side wait for the
 * event to complete, holding s's lock (xcopy_order.c). */
bp_status_t bp__stream_wait_across(bp__stream_t *s, const bp_event_t *eh);

#endif /* BACKPLANE_XCOPY_H */
