#!/bin/sh
# Runs each test binary given, prints its output, and closes with one line
# "N passed, N failed" counting test binaries.
# usage: test/run.sh BUILD_DIR TEST...
b=$1; shift
passed=0; failed=0; failed_names=""
export BACKPLANE_PLUGIN_PATH="$b/plugins"
export LD_LIBRARY_PATH="$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for t in "$@"; do
  echo "=== $t"
  # BP_TEST_PRELOAD (check-asan) goes to compiled tests only: scripts would
  # hand it to every shell and tool they start.
  if [ -n "${BP_TEST_PRELOAD:-}" ] && [ "$(head -c 4 "$t" | tail -c 3)" = ELF ]; then
    run() { LD_PRELOAD="$BP_TEST_PRELOAD" "$@"; }
  else
    run() { "$@"; }
  fi
  if run "$t"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); failed_names="$failed_names $t"; fi
done
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
