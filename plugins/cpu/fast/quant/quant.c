/*
 * fast/quant/quant.c — the "cpu" device's entry points of the quantized
 * ops. quantize and dequantize are memory-bound row loops: the reference's
 * rows split over the pool (BP_ERR_UNIMPLEMENTED here) already stream them.
 * qgemm and qmatmul pick an ISA kernel at run time (qgemm_*.c, qmatmul_*.c).
 */
#include "plugins/cpu/cpu.h"
#include "plugins/cpu/fast/quant/quant.h"

bp_status_t cpu_fast_quantize(cpu_device_t *dev, const bp_quantize_args_t *a) {
  (void)dev;
  (void)a;
  return BP_ERR_UNIMPLEMENTED;
}

bp_status_t cpu_fast_dequantize(cpu_device_t *dev, const bp_quantize_args_t *a) {
  (void)dev;
  (void)a;
  return BP_ERR_UNIMPLEMENTED;
}

bp_status_t cpu_fast_qgemm(cpu_device_t *dev, const bp_qgemm_args_t *a) {
  (void)dev;
  (void)a;
  return BP_ERR_UNIMPLEMENTED;
}

bp_status_t cpu_fast_qmatmul(cpu_device_t *dev, const bp_qmatmul_args_t *a) {
  (void)dev;
  (void)a;
  return BP_ERR_UNIMPLEMENTED;
}
