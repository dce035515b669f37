/*
 * reduce.cl — sum, mean, max, min, prod, var, argmax along one axis
 * (-DDT=x's dtype). Op codes are bp_reduce_op_t. reduce_wg gives each
 * output a work-group (long lines), reduce_item a single work-item (short
 * lines). max / min propagate NaN; argmax returns the first maximum, the
 * first NaN beating everything; var is the two-pass population variance.
 * An empty line gives sum 0, prod 1, max -inf, min +inf, mean/var NaN,
 * argmax 0 (as the CPU reference).
 */
typedef struct {
  ACC v;
  long i;
} bp_arg_t;

/* Whether (a) beats (b) for argmax: NaN first, then larger, then earlier. */
inline bool bp_arg_better(bp_arg_t a, bp_arg_t b) {
  if (isnan(a.v) || isnan(b.v))
    return isnan(a.v) && (!isnan(b.v) || a.i < b.i);
  return a.v > b.v || (a.v == b.v && a.i < b.i);
}

inline ACC bp_red_identity(int op) {
  switch (op) {
  case 2: return (ACC)-INFINITY;
  case 3: return (ACC)INFINITY;
  case 4: return (ACC)1;
  default: return (ACC)0;
  }
}

inline ACC bp_red_combine(int op, ACC a, ACC b) {
  switch (op) {
  case 2: return bp_max_nan(a, b);
  case 3: return bp_min_nan(a, b);
  case 4: return a * b;
  default: return a + b;
  }
}

inline void bp_red_store(__global uchar *yb, ulong yo, long oy, int op,
                         int y_i64, ACC v, long idx, long len) {
  if (op == 6) {
    if (y_i64)
      BP_PTR(long, yb, yo)[oy] = idx;
    else
      BP_PTR(int, yb, yo)[oy] = (int)idx;
    return;
  }
  if (op == 1 || op == 5)
    v = len ? v : (ACC)NAN;
  ST(BP_PTR(T, yb, yo), oy, v);
}

__kernel void reduce_item(__global const uchar *xb, ulong xo,
                          __global uchar *yb, ulong yo, BP_ROW_ARGS, int op,
                          int y_i64) {
  long row = get_global_id(0);
  if (row >= nrows)
    return;
  BP_ROW_SETUP(row, ox, oy);
  __global const T *x = BP_PTR(const T, xb, xo) + ox;
  if (op == 6) {
    bp_arg_t best = {len ? LD(x, 0) : (ACC)0, 0};
    for (long j = 1; j < len; j++) {
      bp_arg_t c = {LD(x, j * sxl), j};
      if (bp_arg_better(c, best))
        best = c;
    }
    bp_red_store(yb, yo, oy, op, y_i64, 0, best.i, len);
    return;
  }
  int cop = op == 5 ? 0 : op;
  ACC acc = bp_red_identity(cop);
  for (long j = 0; j < len; j++)
    acc = bp_red_combine(cop, acc, LD(x, j * sxl));
  if (op == 1 || op == 5)
    acc /= (ACC)len;
  if (op == 5) {
    ACC mean = acc, s = 0;
    for (long j = 0; j < len; j++) {
      ACC d = LD(x, j * sxl) - mean;
      s += d * d;
    }
    acc = s / (ACC)len;
  }
  bp_red_store(yb, yo, oy, op, y_i64, acc, 0, len);
}

__kernel __attribute__((reqd_work_group_size(BP_WG, 1, 1))) void
reduce_wg(__global const uchar *xb, ulong xo, __global uchar *yb, ulong yo,
          BP_ROW_ARGS, int op, int y_i64) {
  __local ACC s[BP_WG];
  __local long si[BP_WG];
  long row = get_group_id(0);
  int t = get_local_id(0);
  BP_ROW_SETUP(row, ox, oy);
  __global const T *x = BP_PTR(const T, xb, xo) + ox;
  if (op == 6) {
    bp_arg_t best = {t < len ? LD(x, t * sxl) : (ACC)-INFINITY, t < len ? t : len};
    for (long j = t + BP_WG; j < len; j += BP_WG) {
      bp_arg_t c = {LD(x, j * sxl), j};
      if (bp_arg_better(c, best))
        best = c;
    }
    s[t] = best.v;
    si[t] = best.i;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = BP_WG / 2; w > 0; w >>= 1) {
      if (t < w) {
        bp_arg_t a = {s[t], si[t]}, b = {s[t + w], si[t + w]};
        if (bp_arg_better(b, a)) {
          s[t] = b.v;
          si[t] = b.i;
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
      bp_red_store(yb, yo, oy, op, y_i64, 0, si[0] < len ? si[0] : 0, len);
    return;
  }
  int cop = op == 5 ? 0 : op;
  ACC acc = bp_red_identity(cop);
  for (long j = t; j < len; j += BP_WG)
    acc = bp_red_combine(cop, acc, LD(x, j * sxl));
  /* Tree combine in local memory (same shape as bp_wg_sum). */
  s[t] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = BP_WG / 2; w > 0; w >>= 1) {
    if (t < w)
      s[t] = bp_red_combine(cop, s[t], s[t + w]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  acc = s[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (op == 1 || op == 5)
    acc /= (ACC)len;
  if (op == 5) {
    ACC mean = acc, sq = 0;
    for (long j = t; j < len; j += BP_WG) {
      ACC d = LD(x, j * sxl) - mean;
      sq += d * d;
    }
    acc = bp_wg_sum(sq, s) / (ACC)len;
  }
  if (t == 0)
    bp_red_store(yb, yo, oy, op, y_i64, acc, 0, len);
}
