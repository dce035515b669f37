#!/bin/sh
# Runs each test given (compiled suites and scripts), prints its output, and
# closes with exactly one line that CI parses:
#   tests: N passed, N failed, N skipped
# The convention every test follows (README, "Tests"):
#   exit 0    passed
#   exit 77   skipped: the test could not run here, and printed a line
#             "SKIP: <reason>" saying why
#   other     failed
# A passing cmocka suite whose every case skipped counts as skipped; one
# that skipped only some cases passes, and its "SKIP: " reasons are listed
# too, so no skip is ever silent.
#
# BP_REQUIRE_DEVICES (comma-separated backends) names the devices whose
# absence is a failure, not a skip. Unless the caller sets it (even to
# empty), it is worked out here from dpkg: a backend whose driver package
# tools/deps.sh installs (lavapipe: mesa-vulkan-drivers, PoCL:
# pocl-opencl-icd) must show a device once that package is installed.
#
# usage: test/run.sh BUILD_DIR TEST...
b=$1; shift
passed=0; failed=0; skipped=0
failed_names=""
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/skips"
: > "$tmp/partial"
export BACKPLANE_PLUGIN_PATH="$b/plugins"
export LD_LIBRARY_PATH="$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Probe verdicts (docs/runtime.md, "Plugin isolation") go to the build
# directory, not the user's ~/.cache; tests that need their own set it.
export BACKPLANE_PROBE_CACHE="${BACKPLANE_PROBE_CACHE:-$b/probe-cache.bin}"

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
if [ -z "${BP_REQUIRE_DEVICES+set}" ]; then
  BP_REQUIRE_DEVICES=""
  if command -v dpkg-query >/dev/null 2>&1; then
    installed mesa-vulkan-drivers && BP_REQUIRE_DEVICES="vulkan"
    installed pocl-opencl-icd && BP_REQUIRE_DEVICES="${BP_REQUIRE_DEVICES:+$BP_REQUIRE_DEVICES,}opencl"
  fi
fi
export BP_REQUIRE_DEVICES
echo "run.sh: devices required (their absence fails): ${BP_REQUIRE_DEVICES:-none}"

for t in "$@"; do
  echo "=== $t"
  # Keep the status apart from tee's: POSIX sh has no PIPESTATUS.
  { "$t" 2>&1; echo $? > "$tmp/rc"; } | tee "$tmp/out"
  rc=$(cat "$tmp/rc")
  reasons=$(sed -n 's/^.*SKIP: //p' "$tmp/out" | sort | uniq -c | sed 's/^ *1 //; s/^ *\([0-9]*\) \(.*\)/\2 (x\1)/')
  if [ "$rc" -eq 0 ] && grep -q '^\[  PASSED  \] 0 test(s)' "$tmp/out" &&
     grep -q '^\[  SKIPPED \]' "$tmp/out"; then
    rc=77 # a cmocka suite that ran nothing
  fi
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    [ -n "$reasons" ] && echo "$reasons" | sed "s|^|  $t: some cases skipped: |" >> "$tmp/partial"
  elif [ "$rc" -eq 77 ]; then
    skipped=$((skipped + 1))
    # every distinct reason: a suite whose cases skip for different reasons
    # names them all, not the one that sorts first
    echo "  $t: $(echo "${reasons:-no reason given (the test printed no \"SKIP: \" line)}" | paste -sd ';' - | sed 's/;/; /g')" >> "$tmp/skips"
  else
    failed=$((failed + 1)); failed_names="$failed_names $t"
  fi
done
if [ -s "$tmp/partial" ]; then echo "passed, with cases skipped:"; cat "$tmp/partial"; fi
if [ -s "$tmp/skips" ]; then echo "skipped:"; cat "$tmp/skips"; fi
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
