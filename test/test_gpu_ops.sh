#!/bin/sh
# test_cuda_ops / test_rocm_ops (this script, copied under both names; the
# name picks the backend) — the op suites on the "cuda" or "rocm" device,
# driven through the CPU shims (libcuda.so.1; the HIP runtime and hiprtc)
# and the vendor BLAS shims (cuBLAS; rocBLAS): every op's launch path
# (marshalling, views, kernel choice, launch geometry; hiprtc and module
# loading on ROCm) against the independent reference of test/common/ref.c,
# plus test_parity against "cpu-ref", then test_ops_blas once more with the
# vendor BLAS forced on and off. The shims run C stand-ins for the kernels,
# so this checks the plugins' host side, not the PTX or HIP kernels
# (tools/gpu-check.sh runs these suites on a real GPU).
# usage: test_cuda_ops | test_rocm_ops   (from test/run.sh; finds its build
# dir itself). On a real GPU machine CUDA_OPS_REAL_DRIVER=1 /
# ROCM_OPS_REAL_RUNTIME=1 keep the system's driver and BLAS.
here=$(cd "$(dirname "$0")" && pwd)
b=$(dirname "$here")
name=$(basename "$0")
export BACKPLANE_PLUGIN_PATH="$b/plugins"
export LD_LIBRARY_PATH="$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export XDG_CACHE_HOME="$cache"
export BACKPLANE_TUNING_CACHE="$cache/tuning.txt"
case "$name" in
  *rocm*)
    backend=rocm other=cuda blas_mode=BACKPLANE_ROCM_BLAS
    if [ -z "$ROCM_OPS_REAL_RUNTIME" ]; then
      export BACKPLANE_HIP_RUNTIME="$here/shims/hip/libamdhip64.so"
      export BACKPLANE_HIPRTC="$here/shims/hip/libhiprtc.so"
      export BACKPLANE_ROCBLAS="$here/shims/rocblas/librocblas.so.4"
    fi ;;
  *)
    backend=cuda other=rocm blas_mode=BACKPLANE_CUDA_BLAS
    # A real cuBLAS needs the real driver: its shim goes with the shim.
    if [ -z "$CUDA_OPS_REAL_DRIVER" ]; then
      export BACKPLANE_CUDA_DRIVER="$here/shims/cuda/libcuda.so.1"
      export BACKPLANE_CUBLAS="$here/shims/cublas/libcublas.so.13"
    fi ;;
esac
export TC_DEVICES="${TC_DEVICES:-$backend,cpu-ref}"
# test_parity compares every visible device with cpu-ref; the other GPU
# backends have their own suites, and PoCL's kernel builds alone take over a
# minute with a cold cache, so only this backend and the CPU are shown.
export BACKPLANE_BACKENDS="${BACKPLANE_BACKENDS:-$backend,cpu,-$other,-opencl,-vulkan}"
failed=0; ran=0
for t in test_ops_blas test_ops_dnn test_ops_norm test_ops_attention test_ops_elementwise \
         test_ops_reduce test_ops_data test_parity; do
  if [ ! -x "$here/$t" ]; then
    echo "SKIP: $t not built"
    continue
  fi
  echo "--- $t (TC_DEVICES=$TC_DEVICES)"
  ran=$((ran + 1))
  "$here/$t" || failed=$((failed + 1))
done
# The gemm suite and the GEMM epilogues once more on each path: the vendor
# BLAS forced (for epilogues: the call, then the epilogue pass on f32 /
# f64), and the own kernels (which fuse the epilogue).
for mode in 1 0; do
  for t in test_ops_blas test_gemm_epilogue; do
    [ -x "$here/$t" ] || continue
    echo "--- $t ($blas_mode=$mode)"
    ran=$((ran + 1))
    env "$blas_mode=$mode" "$here/$t" || failed=$((failed + 1))
  done
done
# The conv2d suite once more on each route: as GEMMs wherever the layout
# allows (with scratch for three images' patches at most, so the image
# chunks run too; the plugin's debug log must show the route taken), and
# the direct kernel only.
conv_mode=$(echo "$blas_mode" | sed 's/_BLAS$/_CONV/')
for mode in 1 0; do
  [ -x "$here/test_ops_dnn" ] || break
  echo "--- test_ops_dnn ($conv_mode=$mode)"
  ran=$((ran + 1))
  log="$cache/conv-$mode.log"
  env "$conv_mode=$mode" "${conv_mode}_SCRATCH=20000" BACKPLANE_DEBUG=debug,plugin \
    "$here/test_ops_dnn" 2>"$log" || failed=$((failed + 1))
  grep -v 'backplane debug' "$log" >&2
  routed=$(grep -c 'conv2d as GEMMs' "$log")
  if [ "$mode" = 1 ] && [ "$routed" -eq 0 ]; then
    echo "FAIL: $conv_mode=1 and no conv2d ran as GEMMs"; failed=$((failed + 1))
  elif [ "$mode" = 0 ] && [ "$routed" -ne 0 ]; then
    echo "FAIL: $conv_mode=0 and $routed conv2d call(s) ran as GEMMs"; failed=$((failed + 1))
  fi
done
echo "$name: $ran suites run, $failed failed"
if [ "$ran" -eq 0 ]; then echo "SKIP: no op suite built"; exit 77; fi
[ "$failed" -eq 0 ]
