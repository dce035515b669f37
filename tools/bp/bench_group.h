/*
 * bench_group.h — bp bench --device group:MEMBERS (bench_group.c): a device
 * group beside its best member on a large GEMM.
 */
#ifndef BP_TOOL_BENCH_GROUP_H
#define BP_TOOL_BENCH_GROUP_H

#include <stdbool.h>

/* Whether argv (argv[0] is "bench") names a device group with --device. */
bool bench_group_wanted(int argc, char **argv);
/* Runs `bp bench --device group:...`; returns the exit status. */
int bench_group_main(int argc, char **argv);

#endif /* BP_TOOL_BENCH_GROUP_H */
