/*
 * bench_quant.h — bp bench --op qgemm (bench_quant.c).
 */
#ifndef BP_TOOLS_BENCH_QUANT_H
#define BP_TOOLS_BENCH_QUANT_H

#include <stdbool.h>

bool bench_quant_wanted(int argc, char **argv);
int bench_quant_main(int argc, char **argv);

#endif /* BP_TOOLS_BENCH_QUANT_H */
