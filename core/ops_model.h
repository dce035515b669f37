/*
 * ops_model.h — what ops_model.c borrows from ops_compose.c (private to
 * the core).
 */
#ifndef BACKPLANE_OPS_MODEL_H
#define BACKPLANE_OPS_MODEL_H

#include "internal.h"

/* A rank-0 index as the ABI's rank >= 1: indices becomes [1], y gains an
 * extent-1 axis at a->axis. */
void bp__model_gather_scalar_index(bp_gather_args_t *a);

/* Runs a checked binary-with-scalar call as bp_binary with a one-element
 * tensor holding the scalar in a's dtype, for a device that runs bp_binary
 * but not BP_OP_BINARY_SCALAR. */
bp_status_t bp__model_binary_scalar_composed(bp__stream_t *s, const char *op,
                                             const bp_binary_scalar_args_t *a, const bp_tensor_t *x,
                                             const bp_tensor_t *y);

#endif /* BACKPLANE_OPS_MODEL_H */
