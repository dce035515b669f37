/*
 * bench_layers.h — what a layer costs (bench_layers.c), printed by bp bench
 * after the call overhead.
 */
#ifndef BP_TOOL_BENCH_LAYERS_H
#define BP_TOOL_BENCH_LAYERS_H

#include "backplane.h"

/* Times the one-element op of the overhead line on dev's device in two
 * contexts of its own, without layers and with the pass-through layer, and
 * prints the difference per call. */
void bench_layers(bp_device_t *dev);

#endif /* BP_TOOL_BENCH_LAYERS_H */
