#include "bp.h"
int bp_cmd_bench(int argc, char **argv) { (void)argc; (void)argv; return 0; }
