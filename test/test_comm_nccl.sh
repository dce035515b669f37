#!/bin/sh
# comm-nccl.so in CI: the "cuda" device over the CUDA driver shim and NCCL
# over its CPU shim (test/shims/nccl: ranks are processes sharing memory),
# 2 ranks started here with RANK/WORLD_SIZE (as torchrun does; no mpirun)
# meeting through an id file (BACKPLANE_NCCL_ID_FILE). Modes of
# $(B)/test/comm_rank on the cuda device, with BACKPLANE_COMM=nccl:
#   grid      every collective x dtype x count on device pointers, f16 and
#             bf16 reduced by NCCL itself (no widening, no staging)
#   mismatch  mismatched calls fail on both ranks, the communicator survives
#   dead      rank 1 is killed: rank 0 gets an error (the shim gives up on a
#             missing peer after BP_NCCL_SHIM_TIMEOUT_MS)
# This checks the plugin's host logic, not NCCL's kernels; on a machine
# with a GPU the same script runs against the real libraries when
# BP_NCCL_REAL=1 (BACKPLANE_CUDA_DRIVER and BACKPLANE_NCCL_LIBRARY unset).
set -u
b=$(cd "${LD_LIBRARY_PATH%%:*}/.." && pwd)
rank=$b/test/comm_rank
[ -x "$rank" ] && [ -f "$b/plugins/comm-nccl.so" ] || { echo "SKIP: comm_rank or comm-nccl.so not built"; exit 77; }
if [ -z "${BP_NCCL_REAL:-}" ]; then
  export BACKPLANE_CUDA_DRIVER=$b/test/shims/cuda/libcuda.so.1
  export BACKPLANE_NCCL_LIBRARY=$b/test/shims/nccl/libnccl.so.2
fi
export BACKPLANE_COMM=nccl BP_NCCL_SHIM_TIMEOUT_MS=2000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The shim's probe verdicts must not come from a cache made without it.
export BACKPLANE_PROBE_CACHE=$tmp/probe-cache.bin
fail=0

# run NAME WANT_OK_LINES: both ranks, a fresh rendezvous file each time.
run() {
  name=$1 want=$2
  export BACKPLANE_NCCL_ID_FILE=$tmp/id-$name
  start=$(date +%s)
  RANK=0 WORLD_SIZE=2 timeout 120 "$rank" "$name" cuda > "$tmp/$name.0" 2>&1 &
  pid=$!
  RANK=1 WORLD_SIZE=2 timeout 120 "$rank" "$name" cuda > "$tmp/$name.1" 2>&1
  wait $pid
  oks=$(cat "$tmp/$name.0" "$tmp/$name.1" | grep -c "^rank [0-9]: $name: ok (2 ranks, plugin nccl)")
  if [ "$oks" -eq "$want" ] && ! grep -q FAILED "$tmp/$name.0" "$tmp/$name.1"; then
    echo "ok: $name over nccl ($oks ranks, $(( $(date +%s) - start )) s)"
    grep -h "^rank 0: dead: error" "$tmp/$name.0" || true
  else
    echo "FAILED: $name over nccl: $oks of $want ranks ok"; tail -n 15 "$tmp/$name.0" "$tmp/$name.1"; fail=1
  fi
}
run grid 2
run mismatch 2
run dead 1
exit $fail
