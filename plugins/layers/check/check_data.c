/*
 * check_data.c — the check layer's view of device memory: reading a byte
 * range through the next descriptor (so it works on any backend, host
 * pointers or not), scanning for NaN and infinity, and the normalised error
 * against the reference.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

void *check_read(const lc_instance_t *in, uint64_t ptr, uint64_t lo, uint64_t hi) {
  void *buf = malloc(hi > lo ? hi - lo : 1);
  if (!buf) return NULL;
  if (hi > lo && in->next->mem_read(in->device, NULL, buf, ptr, lo, hi - lo) != BP_OK) {
    free(buf);
    return NULL;
  }
  return buf;
}

static bool is_float(bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_F64 || dt == BP_F16 || dt == BP_BF16;
}

typedef struct scan {
  const char *buf;
  bp_dtype_t dt;
  bool found;
} scan_t;

static void scan_one(int64_t i, uint64_t at, void *arg) {
  (void)i;
  scan_t *s = arg;
  if (!s->found && !isfinite(lc_load(s->buf + at, s->dt))) s->found = true;
}

bool check_has_nonfinite(const bp_plugin_tensor_t *t, const void *buf, uint64_t lo) {
  if (!is_float(t->dtype) || !lc_tensor_present(t)) return false;
  scan_t s = {buf, t->dtype, false};
  lc_for_each_element(t, lo, scan_one, &s);
  return s.found;
}

typedef struct nmse {
  const char *a, *b;
  bp_dtype_t dt;
  double num, den;
  int64_t differ, count;
} nmse_t;

static void nmse_one(int64_t i, uint64_t at, void *arg) {
  (void)i;
  nmse_t *e = arg;
  double x = lc_load(e->a + at, e->dt), r = lc_load(e->b + at, e->dt);
  e->count++;
  if (x != r && !(isnan(x) && isnan(r))) e->differ++;
  if (isnan(x) != isnan(r) || (isinf(x) || isinf(r))) {
    if (x != r && !(isnan(x) && isnan(r)))
      e->num = INFINITY; /* a non-finite where the other is not */
    return;
  }
  if (isnan(x)) return;
  e->num += (x - r) * (x - r);
  e->den += r * r;
}

double check_nmse(const bp_plugin_tensor_t *t, const void *a, const void *b, uint64_t lo) {
  nmse_t e = {a, b, t->dtype, 0, 0, 0, 0};
  lc_for_each_element(t, lo, nmse_one, &e);
  if (!is_float(t->dtype)) return e.count ? (double)e.differ / (double)e.count : 0;
  if (e.num == 0) return 0;
  return e.den > 0 ? e.num / e.den : INFINITY;
}
