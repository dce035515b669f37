#!/bin/sh
# Start-up time (bp_context_create to the first device entry), best of
# RUNS fresh processes, with isolation off, on with a cold verdict cache
# (emptied before every run) and on with a warm one.
# usage: test/bench_startup.sh [BUILD_DIR] [PLUGIN_DIR]   (RUNS=20)
b=${1:-build}; dir=${2:-$b/plugins}; runs=${RUNS:-20}
export LD_LIBRARY_PATH="$b/lib" BACKPLANE_PLUGIN_PATH="$dir" BACKPLANE_DEBUG=error
cache=$(mktemp -d)/probe-cache.bin
trap 'rm -rf "$(dirname "$cache")"' EXIT
best() { # mode: prints the best time and the device count
  i=0; best=""
  while [ $i -lt "$runs" ]; do
    [ "$1" = cold ] && rm -f "$cache"
    r=$("$b/test/bench_startup") || exit 1
    t=${r% *}
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
    i=$((i + 1))
  done
  echo "$best ms (${r#* } devices)"
}
BACKPLANE_ISOLATE=0 BACKPLANE_PROBE_CACHE=off; export BACKPLANE_ISOLATE BACKPLANE_PROBE_CACHE
echo "isolation off:              $(best off)"
unset BACKPLANE_ISOLATE; BACKPLANE_PROBE_CACHE=$cache
echo "isolation on, cold cache:   $(best cold)"
"$b/test/bench_startup" >/dev/null
echo "isolation on, warm cache:   $(best warm)"
