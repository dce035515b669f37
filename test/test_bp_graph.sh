#!/bin/sh
# bp graph (tools/bp/graph.c): the demo graph captured on the partial test
# device (test/fixtures/partial_plugin.c: no gemm, softmax, cast or reduce,
# no f64) is scheduled onto the CPU, --explain prints each call's device and
# why, and the result matches cpu-ref; with --no-fallback the capture is
# refused (exit 1); bad arguments are usage errors (exit 2).
b=$(cd "${LD_LIBRARY_PATH%%:*}/.." && pwd)
bp=$b/bin/bp
[ -x "$bp" ] || { echo "SKIP: $bp not built"; exit 77; }
[ -f "$b/test/partial-plugin/backend-partial.so" ] || { echo "SKIP: the partial test plugin is not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export BACKPLANE_PLUGIN_PATH="$b/test/partial-plugin:$b/plugins"
export BACKPLANE_BACKENDS="partial,partial2,cpu,-opencl,-vulkan,-cuda,-rocm"
export BACKPLANE_TUNING_CACHE=""
fail=0
err() { echo "FAILED: $*"; fail=1; }
"$bp" graph --explain --device partial --size 16 --no-isolate > "$tmp/out" 2> "$tmp/err" ||
  err "bp graph --explain exited $? ($(cat "$tmp/err"))"
for want in "captured on 'partial' (rank 0, fallback on): scheduled over" \
            "gemm        -> cpu          unsupported here" \
            "why: gemm: backend 'partial' does not implement gemm" \
            "does not support unary for f64" \
            "copies per launch:" \
            "(match)"; do
  grep -qF -- "$want" "$tmp/out" || err "bp graph --explain does not print '$want'"
done
"$bp" graph --device partial --size 16 --time 3 --no-isolate > "$tmp/out" 2> "$tmp/err" ||
  err "bp graph --time exited $? ($(cat "$tmp/err"))"
grep -q "^timed 3 runs, medians: graph launch .* B copied between devices per launch; .* B copied by fallback per pass" \
  "$tmp/out" || err "bp graph --time does not print the timing line: $(cat "$tmp/out")"
"$bp" graph --device partial --size 16 --no-fallback --no-isolate > "$tmp/out" 2> "$tmp/err"
[ $? = 1 ] || err "bp graph --no-fallback on partial should exit 1"
grep -q "does not implement gemm" "$tmp/err" || err "bp graph --no-fallback does not say why: $(cat "$tmp/err")"
# Vulkan on lavapipe has no f64: the f64 tail runs on the CPU, copied out
# of (and back into) memory the host cannot address directly.
if BACKPLANE_PLUGIN_PATH="$b/plugins" BACKPLANE_BACKENDS= "$bp" devices --no-isolate 2>/dev/null | grep -q " vulkan "; then
  BACKPLANE_PLUGIN_PATH="$b/plugins" BACKPLANE_BACKENDS= "$bp" graph --explain --device vulkan --size 16 --no-isolate \
    > "$tmp/out" 2> "$tmp/err" || err "bp graph --device vulkan exited $? ($(cat "$tmp/err"))"
  grep -q "scheduled over" "$tmp/out" && grep -q "(match)" "$tmp/out" ||
    err "bp graph --device vulkan: not scheduled or no match: $(cat "$tmp/out")"
else
  echo "bp graph on vulkan not checked: no vulkan device here"
fi
"$bp" graph --size 0 > /dev/null 2>&1
[ $? = 2 ] || err "bp graph --size 0 should be a usage error"
"$bp" graph stray > /dev/null 2>&1
[ $? = 2 ] || err "bp graph stray should be a usage error"
[ "$fail" = 0 ] && echo "test_bp_graph: placement printed, result matches cpu-ref"
exit "$fail"
