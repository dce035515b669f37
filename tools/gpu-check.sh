#!/bin/sh
# gpu-check.sh — the CUDA backend on a machine with a real NVIDIA GPU, from
# a build made elsewhere (tools/gpu-pack.sh): lists devices, runs the op
# suites, the model and the quantized ops on the real device against
# cpu-ref, `bp conformance` on backend-cuda.so and comm-nccl.so, a one-rank
# NCCL run, and tools/gpu_bench.py (ours beside cuBLAS, cuDNN and flash SDPA
# through PyTorch, in one process). Each step has a time limit, so a hang
# costs its limit, not the run; the correctness steps run side by side
# after the bench, which runs alone. Writes report.md and one log per step.
#
# usage: tools/gpu-check.sh [REPORT_DIR]   (default: $OUT, else ./gpu-check)
#   B=dir      the build (default build; gpu-pack.sh makes gpu-pack/)
#   BUILD=1    build here first (needs the Debian build deps)
#   QUICK=1    small bench sizes and `bp conformance --quick`
#   BENCH_ONLY=a,b  only these tools/gpu_bench.py cases (its --only)
#   STEPS=...  only these steps (devices bench modelbench ops model quant
#              conformance nccl), space-separated
# Exit status: 0 when every step that ran passed.
set -u
cd "$(dirname "$0")/.." || exit 2
B=${B:-build}
export B

# --nccl-one-rank DIR (a step of this script, with its environment): the
# real NCCL on one rank: bp conformance comm-nccl.so, then comm_rank's
# collective grid.
if [ "${1:-}" = --nccl-one-rank ]; then
  BACKPLANE_NCCL_ID_FILE="$2/nccl-id-conf" "$B/bin/bp" conformance "$B/plugins/comm-nccl.so" || exit 1
  # One rank: the grid (every collective x dtype x count on device
  # pointers). The ordering and mismatch checks need two ranks, and NCCL
  # takes one rank per GPU.
  echo "--- comm_rank grid, 1 rank, nccl on cuda"
  RANK=0 WORLD_SIZE=1 BP_COMM_PLUGIN=nccl BACKPLANE_NCCL_ID_FILE="$2/nccl-id-grid" \
    BACKPLANE_DEBUG=${BACKPLANE_DEBUG:-warn,loader} "$B/test/comm_rank" grid cuda || exit 1
  exit 0
fi
out=${1:-${OUT:-gpu-check}}
STEPS=${STEPS:-devices bench modelbench ops model quant conformance nccl}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
report="$out/report.md"
results="$out/steps.txt"
: >"$results"

want() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

# step NAME LOG LIMIT CMD...: runs CMD (LIMIT seconds at most) with output
# in LOG and appends its outcome to steps.txt.
step() {
  name=$1 log=$2 limit=$3
  shift 3
  start=$(date +%s)
  timeout -k 5 "$limit" "$@" >"$out/$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - start))
  case $rc in
    0) res=pass
       # cmocka's skips exit 0: a suite that skipped on a GPU machine says so
       grep -q 'SKIPPED\|^SKIP:' "$out/$log" && res="pass, with skips (see the log)" ;;
    124 | 137) res="FAIL (over its ${limit}s limit)" ;;
    77) res=skipped ;;
    *) res="FAIL (exit $rc)" ;;
  esac
  echo "| $name | $res | ${secs}s | $log |" >>"$results"
  echo "gpu-check: $name: $res (${secs}s)"
}

# The vendor libraries PyTorch's wheels carry (cuBLAS, NCCL) when the
# system has none: the plugins open them by soname.
libdirs=$(find /usr/lib /usr/local /opt -xdev \( -name 'libcublas.so.1[123]' -o -name 'libnccl.so.2' \) \
  2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="$PWD/$B/lib:${libdirs}${LD_LIBRARY_PATH:-}"
export BACKPLANE_PLUGIN_PATH="$PWD/$B/plugins"
export BACKPLANE_LIBRARY="$PWD/$B/lib/libbackplane.so"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
export XDG_CACHE_HOME="${TMPDIR:-/tmp}/gpu-check-cache"
unset BACKPLANE_CUDA_DRIVER BACKPLANE_CUBLAS # the real libcuda.so.1 and cuBLAS
mkdir -p "$XDG_CACHE_HOME"

if [ "${BUILD:-0}" = 1 ]; then
  step build build.log 900 make -j"$(nproc)" B="$B" all
fi
bp="$B/bin/bp"
quick=""
[ "${QUICK:-0}" = 1 ] && quick=--quick

{
  echo "# backplane CUDA check — $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "host: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "commit: $(cat "$B/COMMIT" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "vendor libraries: ${libdirs:-none found}"
  echo
  echo '```'
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 ||
    echo "nvidia-smi not available"
  echo '```'
} >"$report"

want devices && step devices devices.txt 45 "$bp" devices --verbose
if want bench; then
  step "bench (ours beside PyTorch)" bench.txt 150 python3 tools/gpu_bench.py $quick \
    ${BENCH_ONLY:+--only "$BENCH_ONLY"} --json "$out/bench.json"
fi

if want modelbench; then
  step "bp bench --op model (PyTorch on the GPU)" model-bench.txt 120 "$bp" bench --op model --device cuda \
    --quick --json "$out/model-bench.json"
fi

# The correctness steps side by side: 16 CPU cores, and cpu-ref is the slow side.
cuda_only="cuda,cpu,-rocm,-opencl,-vulkan"
if want ops; then
  step "op suites (cuda vs cpu-ref)" ops.txt 150 env CUDA_OPS_REAL_DRIVER=1 TC_DEVICES=cuda,cpu-ref \
    BACKPLANE_BACKENDS=$cuda_only "$B/test/test_cuda_ops" &
fi
if want model; then
  step "model ops (eager and graph)" model-ops.txt 150 env CUDA_OPS_REAL_DRIVER=1 \
    BACKPLANE_BACKENDS=$cuda_only "$B/test/test_ops_model_gpu" &
  step "model parity (GPT-2, Llama)" model.txt 150 env BP_MODEL_NO_SHIMS=1 \
    BACKPLANE_BACKENDS=$cuda_only "$B/test/test_model" &
fi
if want quant; then
  step "quantized ops" quant.txt 150 env CUDA_OPS_REAL_DRIVER=1 \
    BACKPLANE_BACKENDS=$cuda_only "$B/test/test_quant_gpu" &
  step "quantized ops, u8 operands" quant-u8.txt 150 env CUDA_OPS_REAL_DRIVER=1 \
    BACKPLANE_BACKENDS=$cuda_only "$B/test/test_qgemm_u8_gpu" &
  step "quantized ops, fp8 GEMM" quant-fp8.txt 150 env CUDA_OPS_REAL_DRIVER=1 \
    BACKPLANE_BACKENDS=$cuda_only "$B/test/test_qgemm_fp8_gpu" &
fi
if want conformance; then
  step "bp conformance backend-cuda.so" conformance.txt 150 "$bp" conformance $quick \
    --junit "$out/conformance.xml" "$B/plugins/backend-cuda.so" &
fi
if want nccl; then
  step "NCCL, one rank (conformance, grid, ordered)" nccl.txt 150 sh "$0" --nccl-one-rank "$out" &
fi
wait

{
  echo
  echo "| step | result | time | log |"
  echo "|---|---|---|---|"
  cat "$results"
  echo
  [ -f "$out/bench.txt" ] && sed -n '/^| case/,$p' "$out/bench.txt"
} >>"$report"
failed=$(grep -c FAIL "$results")
echo "gpu-check: $failed step(s) failed; report in $report"
[ "$failed" -eq 0 ]
