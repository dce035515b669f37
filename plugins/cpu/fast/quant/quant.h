/*
 * fast/quant/quant.h — the quantized ops' fast kernels (plugins/cpu/fast/quant/).
 */
#ifndef BACKPLANE_CPU_FAST_QUANT_H
#define BACKPLANE_CPU_FAST_QUANT_H

#include "plugins/cpu/cpu.h"

#endif /* BACKPLANE_CPU_FAST_QUANT_H */
