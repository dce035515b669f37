#!/bin/sh
# gpu-check.sh — the CUDA backend on a machine with a real NVIDIA GPU:
# builds, lists devices, runs `bp conformance` on backend-cuda.so, the op
# suites on the real device, the test suite and the bench, and writes a
# report (report.md plus one log per step) to a directory.
#
# usage: tools/gpu-check.sh [REPORT_DIR]     (default: $OUT, else ./gpu-check)
#   B=build-dir     build directory (default build)
#   QUICK=1         bp conformance --quick, and no bench
# Exit status: 0 when every step that ran passed. A missing tool (bp
# conformance, the bench) is reported as skipped, not failed.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${1:-${OUT:-gpu-check}}
B=${B:-build}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
report="$out/report.md"
failed=0

note() { printf '%s\n' "$*" >>"$report"; }

# step NAME LOG CMD...: runs CMD with output in LOG, records the outcome.
step() {
  name=$1; log=$2; shift 2
  start=$(date +%s)
  "$@" >"$out/$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  if [ $rc -eq 0 ]; then res=pass; else res="FAIL (exit $rc)"; failed=$((failed + 1)); fi
  note "| $name | $res | ${secs}s | [$log]($log) |"
  echo "gpu-check: $name: $res (${secs}s, $out/$log)"
  return $rc
}

skip() { note "| $1 | skipped: $2 | | |"; echo "gpu-check: $1: skipped: $2"; }

{
  echo "# backplane CUDA check — $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "host: $(uname -srm), $(nproc) CPUs"
  echo
  echo '```'
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv 2>&1 || echo "nvidia-smi not available"
  echo '```'
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "$(git status --porcelain 2>/dev/null | grep -q . && echo '(with local changes)')"
  echo
  echo "| step | result | time | log |"
  echo "|---|---|---|---|"
} >"$report"

export BACKPLANE_PLUGIN_PATH="$PWD/$B/plugins"
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset BACKPLANE_CUDA_DRIVER # the real libcuda.so.1

step build build.log make -j"$(nproc)" B="$B" all || {
  echo "gpu-check: build failed; see $out/build.log"; exit 1; }
step devices devices.txt "$B/bin/bp" devices
if ! grep -q cuda "$out/devices.txt"; then
  note; note "**No CUDA device listed**: see devices.txt for the plugin's reason."
fi

quick=""
[ "${QUICK:-0}" = 1 ] && quick=--quick
if "$B/bin/bp" conformance --help >/dev/null 2>&1; then
  step conformance conformance.txt "$B/bin/bp" conformance $quick \
    --junit "$out/conformance.xml" "$B/plugins/backend-cuda.so"
else
  skip conformance "this bp has no conformance command"
fi

# The op suites on the real device (test_cuda_ops uses the shim by default).
step "op suites on the GPU" ops-gpu.txt env CUDA_OPS_REAL_DRIVER=1 \
  TC_DEVICES=cuda,cpu-ref "$B/test/test_cuda_ops"
# The model ops (kernels/cuda/model.cu) eagerly and in a CUDA graph.
step "model ops on the GPU" model-ops-gpu.txt env CUDA_OPS_REAL_DRIVER=1 \
  "$B/test/test_ops_model_gpu"
# The quantized ops and i8 / fp8 casts (kernels/cuda/quant.cu) against cpu-ref.
step "quantized ops on the GPU" quant-gpu.txt env CUDA_OPS_REAL_DRIVER=1 \
  "$B/test/test_quant_gpu"
step "test suite" test.txt make B="$B" test
step "PTX checks" ptx.txt sh test/test_cuda_ptx.sh .

if [ -z "$quick" ] && "$B/bin/bp" bench --help >/dev/null 2>&1; then
  step bench bench.txt "$B/bin/bp" bench
else
  skip bench "QUICK=1 or no bench command"
fi

note
note "$failed step(s) failed. Put the bench numbers in docs/performance.md."
echo "gpu-check: report in $report"
[ "$failed" -eq 0 ]
