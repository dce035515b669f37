/*
 * softmax.cl — softmax and log-softmax along one axis (-DDT=code), one
 * work-group per line: max, then sum of exp(x - max), then the outputs.
 * A line holding +inf or NaN gives NaN, as exp(inf - inf) does.
 */
__kernel __attribute__((reqd_work_group_size(BP_WG, 1, 1))) void
softmax(__global const uchar *xb, ulong xo, __global uchar *yb, ulong yo,
        BP_ROW_ARGS, int log_out) {
  __local ACC s[BP_WG];
  long row = get_group_id(0);
  int t = get_local_id(0);
  BP_ROW_SETUP(row, ox, oy);
  __global const T *x = BP_PTR(const T, xb, xo) + ox;
  __global T *y = BP_PTR(T, yb, yo) + oy;
  ACC m = (ACC)-INFINITY;
  for (long j = t; j < len; j += BP_WG)
    m = bp_max_nan(m, LD(x, j * sxl));
  m = bp_wg_max(m, s);
  ACC sum = 0;
  for (long j = t; j < len; j += BP_WG)
    sum += exp(LD(x, j * sxl) - m);
  sum = bp_wg_sum(sum, s);
  ACC inv = (ACC)1 / sum, lse = log(sum);
  for (long j = t; j < len; j += BP_WG) {
    ACC d = LD(x, j * sxl) - m;
    ST(y, j * syl, log_out ? d - lse : exp(d) * inv);
  }
}
