/*
 * op_fields.c — where an op's tensors sit in its argument struct, from the
 * op table's tensors column, so that code which must touch every tensor of
 * any op (the door's capability check, fallback's copies) walks them
 * generically instead of naming each op's fields.
 */
#include <stddef.h>

#include "internal.h"

#define UNPAREN(...) __VA_ARGS__
#define COUNT_(_1, _2, _3, _4, _5, _6, _7, _8, n, ...) n
#define COUNT(...) COUNT_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define EACH_1(F, t, a) F(t, a)
#define EACH_2(F, t, a, ...) F(t, a) EACH_1(F, t, __VA_ARGS__)
#define EACH_3(F, t, a, ...) F(t, a) EACH_2(F, t, __VA_ARGS__)
#define EACH_4(F, t, a, ...) F(t, a) EACH_3(F, t, __VA_ARGS__)
#define EACH_5(F, t, a, ...) F(t, a) EACH_4(F, t, __VA_ARGS__)
#define EACH_6(F, t, a, ...) F(t, a) EACH_5(F, t, __VA_ARGS__)
#define EACH_7(F, t, a, ...) F(t, a) EACH_6(F, t, __VA_ARGS__)
#define EACH_8(F, t, a, ...) F(t, a) EACH_7(F, t, __VA_ARGS__)
#define EACH_N(F, t, k, ...) EACH_##k(F, t, __VA_ARGS__)
#define EACH_K(F, t, k, ...) EACH_N(F, t, k, __VA_ARGS__)
#define EACH(F, t, ...) EACH_K(F, t, COUNT(__VA_ARGS__), __VA_ARGS__)
#define ADD_OFFSET(args_t, field) out[k++] = offsetof(args_t, field);
#define FIELDS_VALUE(args_t, list) EACH(ADD_OFFSET, args_t, UNPAREN list)
#define FIELDS_ARRAYS(args_t, list)

int bp__op_tensor_offsets(bp_op_t op, size_t out[BP__OP_MAX_TENSORS]) {
  int k = 0;
  switch (op) {
#define OP_FIELDS(E, name, args_t, value, capture, tensors)                    \
  case BP_OP_##E: FIELDS_##capture(args_t, tensors) break;
    BP_OP_TABLE_ALL(OP_FIELDS)
#undef OP_FIELDS
  case BP_OP_COUNT: break;
  }
  return k;
}

size_t bp__op_args_size(bp_op_t op) {
  switch (op) {
#define ARGS_SIZE(E, name, args_t, value, capture, tensors)                    \
  case BP_OP_##E: return sizeof(args_t);
    BP_OP_TABLE_ALL(ARGS_SIZE)
#undef ARGS_SIZE
  case BP_OP_COUNT: break;
  }
  return 0;
}

void bp__op_strip_hints(bp_op_t op, void *args) {
  /* a copy whose tensors may be staged elsewhere or replayed later: the
   * constant id described the caller's w where it lay, at the call */
  if (op == BP_OP_CONV2D) ((bp_conv2d_args_t *)args)->w_const_id = 0;
}
