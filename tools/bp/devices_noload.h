/*
 * devices_noload.h — bp devices --no-load (devices_noload.c): the installed
 * plugins and layers listed from their manifests, without loading anything.
 */
#ifndef BP_TOOL_DEVICES_NOLOAD_H
#define BP_TOOL_DEVICES_NOLOAD_H

#include <stdbool.h>

/* Prints the manifests of the search path (and bp's own plugin directory)
 * as a table, or as one JSON object when json. Returns the exit status. */
int bpt_devices_no_load(bool json);

#endif /* BP_TOOL_DEVICES_NOLOAD_H */
