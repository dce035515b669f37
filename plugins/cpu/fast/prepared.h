/*
 * fast/prepared.h — prepared forms of constant tensors (packed or
 * transformed weights), kept between calls.
 *
 * An op whose args carry a constant id for a tensor (bp_conv2d_args_t.
 * w_const_id: the tensor's buffer is marked constant, and the core never
 * gives the id to other contents) may key the form it would otherwise
 * build on every call on that id and on everything else the form depends
 * on, and build it once. The forms live in one process-wide table with a
 * byte budget: the least recently used ones that no call holds go first
 * when a new one needs the room, and a freed allocation takes its forms
 * with it (cpu_mem_free), as a freed form takes the forms prepared from
 * its bytes. Without room a call simply prepares into its scratch as it
 * would without the id.
 */
#ifndef BACKPLANE_CPU_FAST_PREPARED_H
#define BACKPLANE_CPU_FAST_PREPARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugins/cpu/cpu.h"

#define CPU_PREP_WHAT 16 /* words of a key's description */

typedef struct cpu_prep_key {
  uint64_t const_id; /* the core's constant id of the source tensor */
  uint64_t alloc;    /* the source's allocation (its plugin ptr) */
  /* everything else the form depends on: which form, the source's offset,
   * shape, strides and dtype, the kernel it is laid out for */
  uint64_t what[CPU_PREP_WHAT];
} cpu_prep_key_t;

typedef struct cpu_prep cpu_prep_t;

/* The form for key, held until cpu_prep_release. A ready one (*fresh false)
 * is read only. With *fresh true the caller owns a new one of `bytes` and
 * fills it; nobody else sees it until it is released with keep. NULL: none
 * ready and no room for a new one (or another call is filling it), so the
 * caller prepares into its scratch. */
CPU_HIDDEN cpu_prep_t *cpu_prep_get(const cpu_prep_key_t *key, size_t bytes, bool *fresh);
/* Its bytes (64-byte aligned) and one word for the caller's own use. */
CPU_HIDDEN void *cpu_prep_data(cpu_prep_t *p);
CPU_HIDDEN uint64_t *cpu_prep_aux(cpu_prep_t *p);
/* Ends the hold. A fresh form is kept for later calls when keep is true
 * (the caller filled it), else dropped. */
CPU_HIDDEN void cpu_prep_release(cpu_prep_t *p, bool keep);
/* Drops every form made from the allocation at alloc (it is being freed;
 * no call holds them then). */
CPU_HIDDEN void cpu_prep_forget_alloc(uint64_t alloc);
/* Bytes the table holds (tests). */
CPU_HIDDEN size_t cpu_prep_bytes(void);

#endif /* BACKPLANE_CPU_FAST_PREPARED_H */
