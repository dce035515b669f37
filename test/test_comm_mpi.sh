#!/bin/sh
# Communicators across processes over a real (loopback) network: Open MPI's
# mpirun starts 4 ranks of $(B)/test/comm_rank, oversubscribed on however
# many cores there are, talking TCP over lo (the tcp BTL, not shared
# memory). Modes (test/comm_rank.c says what each checks):
#   grid      every collective x dtype x count (0, 1, 7, 1 Mi + 3) on the CPU,
#             then again with every all-reduce and reduce-scatter on the ring
#   staged    the same (small counts) on a device without host memory
#             (vulkan, else opencl): the staging path; skipped without one
#   mismatch  mismatched calls fail on every rank, the communicator survives
#   dead      a rank killed by SIGKILL: the 3 others' call is queued and
#             their synchronize gets an error within the timeout (mpirun
#             --enable-recovery keeps them running)
#   async     calls queued on streams: rank 0's returns before rank 1 has
#             joined (rank 1 waits for a file rank 0 writes after its call
#             returned), a call between a gemm and an add with no
#             synchronize, calls on two streams in call order
# Skips (exit 77) only when Open MPI is not installed; once openmpi-bin is,
# a missing mpirun or a comm-mpi plugin that cannot load is a failure.
set -u
b=$(cd "${LD_LIBRARY_PATH%%:*}/.." && pwd)
rank=$b/test/comm_rank
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

if ! command -v mpirun >/dev/null 2>&1; then
  if installed openmpi-bin; then echo "FAILED: openmpi-bin is installed but mpirun is not on PATH"; exit 1; fi
  echo "SKIP: mpirun not found (Debian: openmpi-bin libopenmpi-dev; tools/deps.sh installs them)"
  exit 77
fi
case "${BP_UNDER_SANITIZER:-}" in
  ?*) echo "SKIP: under sanitizers (Open MPI's own allocations are not instrumented and read as leaks)"
      exit 77 ;;
esac

root=""
[ "$(id -u)" = 0 ] && root="--allow-run-as-root"
# TCP over loopback only; no binding (4 ranks may share 2 cores); ranks
# yield while they wait, since they outnumber the cores. The time limit
# only catches a hang: the ring grid, four ranks on two loaded cores, has
# taken 100 s.
mpi() {
  timeout 400 mpirun $root --oversubscribe --bind-to none -np 4 \
    --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
    --mca mpi_yield_when_idle 1 \
    -x BACKPLANE_PLUGIN_PATH -x LD_LIBRARY_PATH -x BACKPLANE_PROBE_CACHE -x BP_REQUIRE_DEVICES \
    "$@" 2>&1
}

fail=0
# run NAME WANT_OK_LINES [mpirun options --] MODE [ARG]
run() {
  name=$1 want=$2; shift 2
  start=$(date +%s)
  out=$(mpi "$@")
  oks=$(printf '%s\n' "$out" | grep -c "^rank [0-9]*: $name: ok")
  if printf '%s\n' "$out" | grep -q "^SKIP: "; then
    printf '%s\n' "$out" | grep "^SKIP: " | head -1
    return 0
  fi
  if [ "$oks" -eq "$want" ] && ! printf '%s\n' "$out" | grep -q "FAILED"; then
    echo "ok: $name ($oks ranks, $(( $(date +%s) - start )) s)"
    printf '%s\n' "$out" | grep "^rank 0: dead: error" || true
  else
    echo "FAILED: $name: $oks of $want ranks ok"
    printf '%s\n' "$out" | tail -40
    fail=1
  fi
}

# bp devices lists the comm plugin and the library it found.
if "$b/bin/bp" devices 2>/dev/null | sed -n '/^comm plugins/,/^$/p' | grep -q "^  mpi .*Open MPI"; then
  echo "ok: bp devices lists comm-mpi.so with Open MPI"
else
  echo "FAILED: bp devices does not list comm-mpi.so with Open MPI:"
  "$b/bin/bp" devices 2>&1 | sed -n '/^comm plugins/,$p'
  fail=1
fi
# ... and says what becomes of CUDA device buffers (Debian's Open MPI: asked
# at MPI_Init; BACKPLANE_MPI_CUDA_AWARE=0: staged).
if "$b/bin/bp" devices 2>/dev/null | grep -q "CUDA device memory directly if CUDA-aware (MPIX_Query_cuda_support" &&
   BACKPLANE_MPI_CUDA_AWARE=0 "$b/bin/bp" devices 2>/dev/null | grep -q "CUDA device memory staged by the core"; then
  echo "ok: bp devices says how comm-mpi.so takes CUDA device memory"
else
  echo "FAILED: bp devices does not say how comm-mpi.so takes CUDA device memory:"
  "$b/bin/bp" devices 2>&1 | sed -n '/^comm plugins/,$p'
  fail=1
fi
if "$b/bin/bp" devices --json 2>/dev/null | tr -d '\n' | grep -q '"comm_plugins": *\[[^]]*"name": *"mpi"'; then
  echo "ok: bp devices --json lists comm-mpi.so under comm_plugins"
else
  echo "FAILED: bp devices --json has no comm_plugins entry for mpi"; fail=1
fi
run grid 4 "$rank" grid
# The plugin's ring all-reduce and reduce-scatter (plugins/comm-mpi/ring.c)
# take large messages only; here they take every message, cut into 4-byte
# segments, so that every op x dtype x count runs through them with many
# segments per block and many rounds, in place and not.
run grid 4 -x BACKPLANE_MPI_RING_BYTES=0 -x BACKPLANE_MPI_RING_SEGMENT=4 "$rank" grid
staged=""
for dev in vulkan opencl; do
  if BACKPLANE_BACKENDS=$dev "$b/bin/bp" devices 2>/dev/null | grep -q "^ *[0-9].* $dev "; then staged=$dev; break; fi
done
if [ -n "$staged" ]; then
  run staged 4 "$rank" staged "$staged"
else
  echo "SKIP: staged: no vulkan or opencl device to stage through"
fi
run mismatch 4 "$rank" mismatch
# CUDA-aware MPI (docs/scale-out.md): on the "cuda" device (the CUDA driver
# shim, whose device pointers the host can read), Debian's Open MPI says it
# is not CUDA-aware (MPIX_Query_cuda_support() = 0) and the core stages;
# BACKPLANE_MPI_CUDA_AWARE=1 makes the detection say yes and the device
# pointers go to MPI as they are. Both run the small grid.
if [ -f "$b/test/shims/cuda/libcuda.so.1" ]; then
  cache=$(mktemp -u "${TMPDIR:-/tmp}/bp-comm-probe.XXXXXX")
  cuda="-x BACKPLANE_COMM=mpi -x BACKPLANE_CUDA_DRIVER=$b/test/shims/cuda/libcuda.so.1 -x BACKPLANE_PROBE_CACHE=$cache"
  # shellcheck disable=SC2086
  run path 4 $cuda -x "BP_COMM_EXPECT_PATH=staged through host memory: comm plugin 'mpi': Open MPI does not take CUDA device pointers: MPIX_Query_cuda_support() = 0" "$rank" path cuda
  # shellcheck disable=SC2086
  run path 4 $cuda -x BACKPLANE_MPI_CUDA_AWARE=1 -x "BP_COMM_EXPECT_PATH=direct: CUDA device pointers handed to comm plugin 'mpi'" "$rank" path cuda
  rm -f "$cache"
else
  echo "FAILED: the CUDA driver shim is not built"; fail=1
fi
# (the survivors mark their first call done in BP_COMM_DEAD_DIR; the last
# rank dies once every mark is there)
dead_dir=$(mktemp -d)
run dead 3 --enable-recovery -x BP_COMM_DEAD_DIR=$dead_dir "$rank" dead
rm -f "$dead_dir"/*
# ... and met by the ring itself (no call check before it): its requests
# time out too, and their receives are cancelled.
run dead 3 --enable-recovery -x BP_COMM_DEAD_DIR=$dead_dir -x BP_COMM_NO_CALL_CHECK=1 -x BACKPLANE_MPI_RING_BYTES=0 "$rank" dead
rm -rf "$dead_dir"
BP_COMM_READY_FILE=$(mktemp -u "${TMPDIR:-/tmp}/bp-comm-async.XXXXXX")
export BP_COMM_READY_FILE
run async 4 -x BP_COMM_READY_FILE "$rank" async
rm -f "$BP_COMM_READY_FILE"
# docs/examples/data_parallel.c: 4 ranks train an MLP on shards with their
# gradients all-reduced; rank 0 checks the result against one process on
# the whole batch and the program exits non-zero on a mismatch.
here=$(cd "$(dirname "$0")/.." && pwd)
if cc -std=c11 -Wall -Wextra -Werror -I"$here" -I"$here/core" -o "$b/test/data_parallel" \
     "$here/docs/examples/data_parallel.c" -L"$b/lib" -lbackplane -Wl,-rpath,"$b/lib" -lm &&
   out=$(mpi "$b/test/data_parallel") && printf '%s\n' "$out" | grep -q "^data_parallel: 4 ranks"; then
  printf '%s\n' "$out" | grep "^data_parallel:" | sed 's/^/ok: /'
else
  echo "FAILED: docs/examples/data_parallel.c under mpirun:"; printf '%s\n' "${out:-}" | tail -20; fail=1
fi
# bp conformance on comm plugins: the real one passes in 2 child ranks, a
# broken fixture fails, one whose library is absent is unsupported.
out=$("$b/bin/bp" conformance "$b/plugins/comm-mpi.so" 2>&1)
if [ $? -eq 0 ] && printf '%s\n' "$out" | grep -q "PASS *mismatch" && printf '%s\n' "$out" | grep -q "result: PASS"; then
  echo "ok: bp conformance comm-mpi.so passes (2 ranks)"
else
  echo "FAILED: bp conformance comm-mpi.so:"; printf '%s\n' "$out" | tail -20; fail=1
fi
out=$("$b/bin/bp" conformance "$b/test/comm-fixtures/comm-badmagic.so" "$b/test/comm-fixtures/comm-unavailable.so" 2>&1)
if [ $? -eq 1 ] && printf '%s\n' "$out" | grep -q "FAIL *load: .*bad magic" &&
   printf '%s\n' "$out" | grep -q "UNSUPPORTED *load: .*libfixture.so.1 not found"; then
  echo "ok: bp conformance fails a bad comm plugin and calls an absent library unsupported"
else
  echo "FAILED: bp conformance on broken comm plugins:"; printf '%s\n' "$out" | tail -20; fail=1
fi
# bp comm-bench runs under mpirun and prints one line per size (its figures
# are not checked: timings are not results).
out=$(mpi "$b/bin/bp" comm-bench --min-bytes 8 --max-bytes 2048 --iters 3 --warmup 1)
if [ $? -eq 0 ] && printf '%s\n' "$out" | grep -q "^ *2048 " && printf '%s\n' "$out" | grep -q "^ *8 "; then
  echo "ok: bp comm-bench under mpirun"
else
  echo "FAILED: bp comm-bench under mpirun:"; printf '%s\n' "$out" | tail -20; fail=1
fi
exit $fail
