/*
 * check.h — the check layer's parts: findings and the op hook (check.c),
 * reading device memory (check_data.c), the reference device (check_ref.c).
 */
#ifndef BP_LAYER_CHECK_H
#define BP_LAYER_CHECK_H

#include "plugins/layers/common/layer_common.h"

extern const bp_host_services_t *check_host;

/* The bytes [lo, hi) of allocation ptr on in's device, read synchronously
 * into a new buffer (free it); NULL when the plugin cannot read them. */
void *check_read(const lc_instance_t *in, uint64_t ptr, uint64_t lo, uint64_t hi);
/* Whether t (its bytes from lo in buf) holds a NaN or an infinity. */
bool check_has_nonfinite(const bp_plugin_tensor_t *t, const void *buf, uint64_t lo);
/* The normalised error sum((a-b)^2) / sum(b^2) of t's elements in a
 * against the same in b (b the reference; 0/0 is 0; integer dtypes: the
 * fraction of elements that differ). */
double check_nmse(const bp_plugin_tensor_t *t, const void *a, const void *b, uint64_t lo);

/* Re-runs op on the CPU plugin's reference device (cpu-ref) with the
 * tensors' bytes before the op (snaps[i] holds [los[i], his[i]) of tensor
 * i), and reads the output's extent into out (his[n-1] - los[n-1] bytes).
 * BP_ERR_UNAVAILABLE when there is no reference device. Serialised. */
bp_status_t check_ref_run(bp_op_t op, const void *args, int n, void *const snaps[], const uint64_t los[],
                          const uint64_t his[], void *out);
/* Why the reference device is absent, "" when it is there. */
const char *check_ref_unavailable(void);

#endif /* BP_LAYER_CHECK_H */
