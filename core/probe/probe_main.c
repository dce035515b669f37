/*
 * probe_main.c — bp-probe, the helper libbackplane starts to probe a plugin
 * away from the application (core/isolate.c). It is the loader's own code
 * linked into a small executable: `bp-probe --probe PLUGIN.so`, with the
 * result channel on fd 3 and the shared result area on fd 4. Installed in
 * $(LIBDIR)/backplane/ beside the plugins; not meant to be run by hand.
 */
#include "isolate.h"

int main(int argc, char **argv) {
  return bp__probe_helper_main(argc, argv);
}
