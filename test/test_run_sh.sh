#!/bin/sh
# test_run_sh — test/run.sh's counting: runs it over fake tests that pass
# (exit 0), fail (exit 1), skip (exit 77 with "SKIP: <reason>"), skip some
# cmocka cases, or skip every cmocka case, and checks the closing line
# "tests: N passed, N failed, N skipped", the skip reasons and the exit
# status; then that the Vulkan and OpenCL suites fail without a device when
# BP_REQUIRE_DEVICES names their backend, and skip otherwise.
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0
check() { # what, condition...
  what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; failed=$((failed + 1)); fi
}
fake() { # name, body
  printf '#!/bin/sh\n%s\n' "$2" > "$tmp/$1"
  chmod +x "$tmp/$1"
}
fake pass 'echo fine; exit 0'
fake fail 'echo broken >&2; exit 1'
fake crash 'kill -SEGV $$'
fake skip 'echo "SKIP: no widget here"; exit 77'
fake skip_silent 'exit 77'
fake partial 'echo "[  SKIPPED ] test_x"; echo "SKIP: no AVX-512 on this CPU"; echo "[  PASSED  ] 3 test(s)."; exit 0'
fake all_cases_skipped 'echo "SKIP: needs root"; echo "SKIP: no AMX here"; echo "[  PASSED  ] 0 test(s)."; echo "[  SKIPPED ] test_y"; exit 0'

run() { BP_REQUIRE_DEVICES= sh "$here/run.sh" "$tmp/b" "$@" > "$tmp/log" 2>&1; }

run "$tmp/pass" "$tmp/fail" "$tmp/crash" "$tmp/skip" "$tmp/skip_silent" "$tmp/partial" "$tmp/all_cases_skipped"
rc=$?
last=$(tail -n 1 "$tmp/log")
check "closing line counts pass/fail/skip ($last)" [ "$last" = "tests: 2 passed, 2 failed, 3 skipped" ]
check "exit status 1 when a test failed" [ "$rc" -eq 1 ]
check "the skip reason is listed" grep -q "skip: no widget here" "$tmp/log"
check "a skip without a reason says so" grep -q "skip_silent: no reason given" "$tmp/log"
check "a partial skip is listed with its reason" grep -q "partial: some cases skipped: no AVX-512 on this CPU" "$tmp/log"
check "a suite that skipped every case counts as skipped, every reason named" grep -q "all_cases_skipped: needs root; no AMX here" "$tmp/log"
check "failed tests are named" grep -q "^failed: $tmp/fail $tmp/crash" "$tmp/log"

run "$tmp/pass" "$tmp/skip"
rc=$?
last=$(tail -n 1 "$tmp/log")
check "passes and skips only: exit 0 ($last)" [ "$rc" -eq 0 ] && [ "$last" = "tests: 1 passed, 0 failed, 1 skipped" ]

# BP_REQUIRE_DEVICES is worked out from dpkg only when the caller left it
# unset, and reaches the tests.
fake show 'echo "required=[$BP_REQUIRE_DEVICES]"'
BP_REQUIRE_DEVICES=opencl sh "$here/run.sh" "$tmp/b" "$tmp/show" > "$tmp/log" 2>&1
check "BP_REQUIRE_DEVICES from the caller is kept" grep -q "required=\[opencl\]" "$tmp/log"

# The device suites: with their driver hidden, a required backend fails the
# suite and an optional one skips it (test/skip.h). Run from test/run.sh,
# LD_LIBRARY_PATH's first entry is BUILD_DIR/lib.
lib=${LD_LIBRARY_PATH%%:*}
b=$(cd "$lib/.." 2>/dev/null && pwd)
device_case() { # backend, suite, env that hides the driver
  backend=$1 suite=$2 hide=$3
  [ -n "$b" ] && [ -x "$b/test/$suite" ] || { echo "SKIP: $b/test/$suite not built"; return; }
  env "$hide" BP_REQUIRE_DEVICES="$backend" "$b/test/$suite" > "$tmp/log" 2>&1
  check "$suite without a device, $backend required: fails" [ $? -eq 1 ]
  check "$suite says why it failed" grep -q "^FAIL: no $backend device" "$tmp/log"
  env "$hide" BP_REQUIRE_DEVICES= "$b/test/$suite" > "$tmp/log" 2>&1
  check "$suite without a device, $backend not required: skips (77)" [ $? -eq 77 ]
  check "$suite says why it skipped" grep -q "^SKIP: no $backend device" "$tmp/log"
}
device_case vulkan test_vulkan VK_ICD_FILENAMES=/nonexistent/icd.json
device_case opencl test_opencl OCL_ICD_VENDORS=/nonexistent
device_case opencl test_opencl_plugin OCL_ICD_VENDORS=/nonexistent

echo "test_run_sh: $failed failed"
[ "$failed" -eq 0 ]
