/*
 * run_stats.h — bp run --stats (run_stats.c): the stats layer on the run's
 * devices, and its table afterwards.
 */
#ifndef BP_TOOL_RUN_STATS_H
#define BP_TOOL_RUN_STATS_H

#include <stdio.h>

#include "backplane.h"

/* Puts the stats layer on top of BACKPLANE_LAYERS for the contexts this
 * process creates from now on, with its report at exit turned off (the
 * table comes from bpt_print_run_stats instead). */
void bpt_enable_stats_layer(void);
/* Prints the stats layer's counters per device and op to f; says why when
 * the layer was refused. */
void bpt_print_run_stats(bp_context_t *ctx, FILE *f);

#endif /* BP_TOOL_RUN_STATS_H */
