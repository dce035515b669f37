/*
 * nn_harness.h — the device loop and the cpu,cpu-ref group shared by the
 * ABI 1.5 suites of test/ops_nn.mk (test_gemm_epilogue, test_attention_mask):
 * each runs its cases on every device of a default context and on a group
 * that splits them, and the setup of both is the same.
 */
#ifndef NN_HARNESS_H
#define NN_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "tc.h"

/* Opens the device of the given rank into e and its entry, counting a
 * failure (a listed device must open) and returning false when it does not. */
bool nn_open_rank(bp_context_t *ctx, uint32_t rank, tc_env_t *e, bp_device_entry_t *entry);

/* Opens the group "cpu,cpu-ref" into g with split shares: a tuning cache
 * under dir (a mkdtemp template, rewritten) gives both members equal
 * calibration times, so both take a slice of any splittable call. */
void nn_group_open(bp_context_t *ctx, char *dir, tc_env_t *g);

/* Checks that each member of g ran a slice, then closes g and removes the
 * tuning cache under dir. */
void nn_group_close(tc_env_t *g, const char *dir);

#endif
