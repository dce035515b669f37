#!/bin/sh
# test_cuda_ops — the op suites on the "cuda" device, driven through the CPU
# shim of libcuda.so.1: every op's launch path (marshalling, views, kernel
# choice, launch geometry) against the independent reference of
# test/common/ref.c, plus test_parity against "cpu-ref". The shim runs C
# stand-ins for the kernels, so this checks the plugin's host side, not the
# PTX (tools/gpu-check.sh runs these suites on a real GPU).
# usage: test_cuda_ops   (from test/run.sh; finds its build dir itself)
here=$(cd "$(dirname "$0")" && pwd)
b=$(dirname "$here")
shim="$here/shims/cuda/libcuda.so.1"
export BACKPLANE_PLUGIN_PATH="$b/plugins"
export LD_LIBRARY_PATH="$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# On a real GPU machine CUDA_OPS_REAL_DRIVER=1 keeps the system driver.
# gemm is tuned between the plugin's kernels and cuBLAS: the cuBLAS shim
# over the driver shim here (a real cuBLAS needs the real driver).
if [ -z "$CUDA_OPS_REAL_DRIVER" ]; then
  export BACKPLANE_CUDA_DRIVER="$shim"
  export BACKPLANE_CUBLAS="$here/shims/cublas/libcublas.so.13"
fi
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export BACKPLANE_TUNING_CACHE="$cache/tuning.txt"
export TC_DEVICES="${TC_DEVICES:-cuda,cpu-ref}"
# test_parity compares every visible device with cpu-ref; the other GPU
# backends have their own suites, and PoCL's kernel builds alone take over a
# minute with a cold cache, so only this backend and the CPU are shown.
export BACKPLANE_BACKENDS="${BACKPLANE_BACKENDS:-cuda,cpu,-rocm,-opencl,-vulkan}"
failed=0; ran=0
for t in test_ops_blas test_ops_dnn test_ops_attention test_ops_elementwise \
         test_ops_reduce test_ops_data test_parity; do
  if [ ! -x "$here/$t" ]; then
    echo "test_cuda_ops: $t not built, skipped"
    continue
  fi
  echo "--- $t (TC_DEVICES=$TC_DEVICES)"
  ran=$((ran + 1))
  "$here/$t" || failed=$((failed + 1))
done
# The gemm suite once more on each path: cuBLAS forced, own kernels forced.
for mode in 1 0; do
  [ -x "$here/test_ops_blas" ] || break
  echo "--- test_ops_blas (BACKPLANE_CUDA_BLAS=$mode)"
  ran=$((ran + 1))
  BACKPLANE_CUDA_BLAS=$mode "$here/test_ops_blas" || failed=$((failed + 1))
done
echo "test_cuda_ops: $ran suites run, $failed failed"
[ "$failed" -eq 0 ]
