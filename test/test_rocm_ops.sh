#!/bin/sh
# test_rocm_ops — the op suites on the "rocm" device, driven through the CPU
# shims of the HIP runtime and hiprtc: every op's launch path (marshalling,
# views, kernel choice, launch geometry, hiprtc and module loading) against
# the independent reference of test/common/ref.c, plus test_parity against
# "cpu-ref". The shim runs C stand-ins for the kernels, so this checks the
# plugin's host side, not the HIP kernels (see docs/backend-rocm.md).
# usage: test_rocm_ops   (from test/run.sh; finds its build dir itself)
here=$(cd "$(dirname "$0")" && pwd)
b=$(dirname "$here")
export BACKPLANE_PLUGIN_PATH="$b/plugins"
export LD_LIBRARY_PATH="$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# On a real AMD machine ROCM_OPS_REAL_RUNTIME=1 keeps the system's ROCm.
if [ -z "$ROCM_OPS_REAL_RUNTIME" ]; then
  export BACKPLANE_HIP_RUNTIME="$here/shims/hip/libamdhip64.so"
  export BACKPLANE_HIPRTC="$here/shims/hip/libhiprtc.so"
  # gemm is tuned between the plugin's kernels and rocBLAS (its shim here).
  export BACKPLANE_ROCBLAS="$here/shims/rocblas/librocblas.so.4"
fi
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export XDG_CACHE_HOME="$cache"
export BACKPLANE_TUNING_CACHE="$cache/tuning.txt"
export TC_DEVICES="${TC_DEVICES:-rocm,cpu-ref}"
# test_parity compares every visible device with cpu-ref; the other GPU
# backends have their own suites, and PoCL's kernel builds alone take over a
# minute with a cold cache, so only this backend and the CPU are shown.
export BACKPLANE_BACKENDS="${BACKPLANE_BACKENDS:-rocm,cpu,-cuda,-opencl,-vulkan}"
failed=0; ran=0
for t in test_ops_blas test_ops_dnn test_ops_attention test_ops_elementwise \
         test_ops_reduce test_ops_data test_parity; do
  if [ ! -x "$here/$t" ]; then
    echo "test_rocm_ops: $t not built, skipped"
    continue
  fi
  echo "--- $t (TC_DEVICES=$TC_DEVICES)"
  ran=$((ran + 1))
  "$here/$t" || failed=$((failed + 1))
done
# The gemm suite once more on each path: rocBLAS forced, own kernels forced.
for mode in 1 0; do
  [ -x "$here/test_ops_blas" ] || break
  echo "--- test_ops_blas (BACKPLANE_ROCM_BLAS=$mode)"
  ran=$((ran + 1))
  BACKPLANE_ROCM_BLAS=$mode "$here/test_ops_blas" || failed=$((failed + 1))
done
echo "test_rocm_ops: $ran suites run, $failed failed"
[ "$failed" -eq 0 ]
