#!/bin/sh
# comm-nccl.so and comm-rccl.so in CI: the "cuda" device over the CUDA
# driver shim and the "rocm" device over the HIP runtime shim, NCCL (and
# RCCL, which keeps its API) over a CPU shim (test/shims/nccl: ranks are
# processes sharing memory), 2 ranks started here with RANK/WORLD_SIZE (as
# torchrun does; no mpirun) meeting through an id file. Modes of
# $(B)/test/comm_rank on the device, with BACKPLANE_COMM naming the plugin:
#   grid      every collective x dtype x count on device pointers, f16 and
#             bf16 reduced by the library itself (no widening, no staging)
#   mismatch  mismatched calls fail on both ranks, the communicator survives
#   dead      rank 1 is killed: rank 0 gets an error (the shim gives up on a
#             missing peer after BP_NCCL_SHIM_TIMEOUT_MS)
#   ordered   the calls go on the backend's own stream, and an add queued
#             after one before the peer joined sees its result
# This checks the plugins' host logic, not NCCL's kernels; on a machine
# with a GPU the same script runs against the real libraries when
# BP_NCCL_REAL=1 (nccl only, with the system's libcuda and libnccl).
set -u
b=$(cd "${LD_LIBRARY_PATH%%:*}/.." && pwd)
rank=$b/test/comm_rank
[ -x "$rank" ] || { echo "SKIP: $rank not built"; exit 77; }
export BP_NCCL_SHIM_TIMEOUT_MS=2000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The shim's probe verdicts must not come from a cache made without it.
export BACKPLANE_PROBE_CACHE=$tmp/probe-cache.bin
fail=0

# run PLUGIN DEVICE NAME WANT_OK_LINES: both ranks, a fresh rendezvous file.
run() {
  plugin=$1 dev=$2 name=$3 want=$4
  export BACKPLANE_NCCL_ID_FILE=$tmp/id-$plugin-$name BACKPLANE_RCCL_ID_FILE=$tmp/id-$plugin-$name
  # dead: the survivor marks its first call done here before rank 1 dies
  export BP_COMM_DEAD_DIR=$tmp/dead-$plugin
  mkdir -p "$BP_COMM_DEAD_DIR"
  start=$(date +%s)
  RANK=0 WORLD_SIZE=2 BACKPLANE_COMM=$plugin timeout 120 "$rank" "$name" "$dev" > "$tmp/$name.0" 2>&1 &
  pid=$!
  RANK=1 WORLD_SIZE=2 BACKPLANE_COMM=$plugin timeout 120 "$rank" "$name" "$dev" > "$tmp/$name.1" 2>&1
  wait $pid
  oks=$(cat "$tmp/$name.0" "$tmp/$name.1" | grep -c "^rank [0-9]: $name: ok (2 ranks, plugin $plugin)")
  if [ "$oks" -eq "$want" ] && ! grep -q FAILED "$tmp/$name.0" "$tmp/$name.1"; then
    echo "ok: $name over $plugin on $dev ($oks ranks, $(( $(date +%s) - start )) s)"
    grep -h "^rank 0: dead: error" "$tmp/$name.0" || true
  else
    echo "FAILED: $name over $plugin on $dev: $oks of $want ranks ok"; tail -n 15 "$tmp/$name.0" "$tmp/$name.1"
    fail=1
  fi
}
for v in nccl rccl; do
  [ -f "$b/plugins/comm-$v.so" ] || { echo "FAILED: comm-$v.so not built"; fail=1; continue; }
  if [ -n "${BP_NCCL_REAL:-}" ]; then
    [ $v = nccl ] || continue
  elif [ $v = nccl ]; then
    export BACKPLANE_CUDA_DRIVER=$b/test/shims/cuda/libcuda.so.1 BACKPLANE_NCCL_LIBRARY=$b/test/shims/nccl/libnccl.so.2
  else
    export BACKPLANE_HIP_RUNTIME=$b/test/shims/hip/libamdhip64.so BACKPLANE_HIPRTC=$b/test/shims/hip/libhiprtc.so
    export BACKPLANE_RCCL_LIBRARY=$b/test/shims/nccl/librccl.so.1
  fi
  dev=cuda
  [ $v = rccl ] && dev=rocm
  run $v $dev grid 2
  run $v $dev mismatch 2
  run $v $dev dead 1
  # the collectives go on the backend's own stream (plugin ABI 1.5's
  # stream_native, comm ABI 1.1's BP_COMM_ENQUEUE): work queued after one
  # is ordered after it by the stream, not by a host wait for its end
  export BP_COMM_READY_FILE=$tmp/ready-$v BP_COMM_EXPECT_PATH="enqueued on the backend's own streams"
  run $v $dev ordered 2
  unset BP_COMM_READY_FILE BP_COMM_EXPECT_PATH
  # bp conformance joins on the device whose memory the plugin takes
  out=$(BACKPLANE_COMM= "$b/bin/bp" conformance "$b/plugins/comm-$v.so" 2>&1)
  if [ $? -eq 0 ] && printf '%s\n' "$out" | grep -q "PASS *all_reduce" && printf '%s\n' "$out" | grep -q "result: PASS"; then
    echo "ok: bp conformance comm-$v.so passes on $dev"
  else
    echo "FAILED: bp conformance comm-$v.so:"; printf '%s\n' "$out" | tail -15; fail=1
  fi
done
exit $fail
