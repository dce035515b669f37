/*
 * bench_fallback.h — what automatic fallback costs beyond its copies
 * (bench_fallback.c), printed by bp bench after the overhead line.
 */
#ifndef BP_TOOL_BENCH_FALLBACK_H
#define BP_TOOL_BENCH_FALLBACK_H

#include "backplane.h"

/* Finds a one-element op that dev cannot run but another device can, and
 * prints its time per call through fallback, the same op's time on the
 * target device called directly, the copies' time, and the rest: the
 * fallback's own overhead. Prints why when nothing on dev falls back. */
void bench_fallback(bp_device_t *dev);

#endif /* BP_TOOL_BENCH_FALLBACK_H */
