/*
 * comm_ref.h — the reference the communicator checks compare with
 * (bp conformance comm-*.so, test/comm_rank.c): every rank computes, on
 * its own, what every other rank holds and what each collective must
 * produce. Values are small integers (products of 1, 2 and -1 for PROD),
 * so every result is exact in every dtype and in any order of summation;
 * averages are sums divided by the rank count, truncated toward zero for
 * integers.
 */
#ifndef BP_TOOL_COMM_REF_H
#define BP_TOOL_COMM_REF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backplane.h"
#include "kernels/common/bp_half.h"

static inline const char *ref_op_name(bp_comm_reduce_op_t op) {
  static const char *const names[] = {"sum", "prod", "max", "min", "avg"};
  return (unsigned)op < BP_COMM_REDUCE_COUNT ? names[op] : "?";
}

/* Rank r's element i when the call reduces with op. */
static inline double ref_value(bp_dtype_t dt, int r, uint64_t i, bp_comm_reduce_op_t op) {
  if (op == BP_COMM_PROD) {
    double m = (i + (uint64_t)r) % 3 == 0 ? 2 : 1;
    return dt != BP_U8 && (i + 2 * (uint64_t)r) % 5 == 0 ? -m : m;
  }
  if (dt == BP_U8) return (double)((i * 7 + (uint64_t)r * 3) % 13);
  return (double)((i * 7 + (uint64_t)r * 3) % 11) - 5;
}

static inline void ref_put(void *buf, bp_dtype_t dt, uint64_t i, double v) {
  switch (dt) {
  case BP_F32: ((float *)buf)[i] = (float)v; break;
  case BP_F64: ((double *)buf)[i] = v; break;
  case BP_F16: ((uint16_t *)buf)[i] = bp_f64_to_f16(v); break;
  case BP_BF16: ((uint16_t *)buf)[i] = bp_f64_to_bf16(v); break;
  case BP_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case BP_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
  case BP_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
  default: break;
  }
}

static inline double ref_get(const void *buf, bp_dtype_t dt, uint64_t i) {
  switch (dt) {
  case BP_F32: return ((const float *)buf)[i];
  case BP_F64: return ((const double *)buf)[i];
  case BP_F16: return bp_f16_to_f64(((const uint16_t *)buf)[i]);
  case BP_BF16: return bp_bf16_to_f64(((const uint16_t *)buf)[i]);
  case BP_I32: return ((const int32_t *)buf)[i];
  case BP_I64: return (double)((const int64_t *)buf)[i];
  case BP_U8: return ((const uint8_t *)buf)[i];
  default: return 0;
  }
}

static inline void *ref_alloc(bp_dtype_t dt, uint64_t n) {
  return calloc(n ? n : 1, bp_dtype_size(dt));
}

/* Rank r's send buffer: elements offset .. offset + n - 1. */
static inline void *ref_fill(bp_dtype_t dt, uint64_t n, int r, bp_comm_reduce_op_t op, uint64_t offset) {
  void *b = ref_alloc(dt, n);
  for (uint64_t i = 0; b && i < n; i++) ref_put(b, dt, i, ref_value(dt, r, offset + i, op));
  return b;
}

/* op over ranks 0 .. size - 1 of elements offset .. offset + n - 1. */
static inline void *ref_reduce(bp_dtype_t dt, uint64_t n, int size, bp_comm_reduce_op_t op, uint64_t offset) {
  void *b = ref_alloc(dt, n);
  bool integer = dt == BP_I32 || dt == BP_I64 || dt == BP_U8;
  for (uint64_t i = 0; b && i < n; i++) {
    double acc = ref_value(dt, 0, offset + i, op);
    for (int r = 1; r < size; r++) {
      double v = ref_value(dt, r, offset + i, op);
      if (op == BP_COMM_SUM || op == BP_COMM_AVG) acc += v;
      else if (op == BP_COMM_PROD) acc *= v;
      else if (op == BP_COMM_MAX) acc = v > acc ? v : acc;
      else acc = v < acc ? v : acc;
    }
    if (op == BP_COMM_AVG) acc = integer ? (double)((int64_t)acc / size) : acc / size;
    ref_put(b, dt, i, acc);
  }
  return b;
}

/* What all_gather leaves on every rank: rank r's block at r * n. */
static inline void *ref_gather(bp_dtype_t dt, uint64_t n, int size) {
  void *b = ref_alloc(dt, n * (uint64_t)size);
  for (int r = 0; b && r < size; r++)
    for (uint64_t i = 0; i < n; i++) ref_put(b, dt, (uint64_t)r * n + i, ref_value(dt, r, i, BP_COMM_SUM));
  return b;
}

/* The first element where a and b differ bytewise, n when none does. */
static inline uint64_t ref_first_difference(const void *a, const void *b, bp_dtype_t dt, uint64_t n) {
  size_t es = bp_dtype_size(dt);
  if (!a || !b || !memcmp(a, b, n * es)) return n;
  for (uint64_t i = 0; i < n; i++)
    if (memcmp((const char *)a + i * es, (const char *)b + i * es, es)) return i;
  return n;
}

#endif /* BP_TOOL_COMM_REF_H */
