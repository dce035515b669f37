/*
 * bench_copy.h — bp bench --copies (bench_copy.c): copy bandwidth between
 * every ordered pair of devices beside host memcpy.
 */
#ifndef BP_TOOL_BENCH_COPY_H
#define BP_TOOL_BENCH_COPY_H

/* Runs `bp bench --copies ...` (argv[0] is "bench"); returns the exit
 * status. */
int bench_copy_main(int argc, char **argv);

#endif /* BP_TOOL_BENCH_COPY_H */
