/*
 * op_features.c — the optional parts of an op's arguments (ABI 1.5), as
 * BP_FEATURE_* bits of bp_device_info_t.op_features: which ones a call
 * uses, so that the door refuses a call whose device does not claim them
 * exactly as it refuses an unclaimed dtype (and fallback, the graph
 * scheduler and conformance see the same answer), and their names for the
 * message. An op family with no optional parts uses none.
 */
#include "internal.h"

uint32_t bp__op_features_used(bp_op_t op, const void *args) {
  (void)args;
  switch (op) {
  default: break;
  }
  return 0;
}

const char *bp__op_feature_name(bp_op_t op, uint32_t bit) {
  (void)op;
  (void)bit;
  return "an optional feature";
}
