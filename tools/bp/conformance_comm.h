/*
 * conformance_comm.h — bp conformance for comm plugins (conformance_comm.c).
 */
#ifndef BP_TOOL_CONFORMANCE_COMM_H
#define BP_TOOL_CONFORMANCE_COMM_H

#include <stdbool.h>

/* Whether path names a comm plugin (comm-*.so). */
bool bpt_is_comm_plugin(const char *path);
/* Checks the n comm plugins in paths and prints a table; returns the exit
 * status (0: every check passed or is unsupported here). */
int bpt_conformance_comm(int n, char **paths, bool quick);

#endif /* BP_TOOL_CONFORMANCE_COMM_H */
