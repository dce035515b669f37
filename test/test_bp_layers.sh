#!/bin/sh
# bp and layers: `bp trace -- COMMAND` writes a Perfetto trace of COMMAND's
# ops and passes its exit status on; `bp run --stats` prints the stats
# layer's counts per device and op; `bp devices` lists the layers.
set -eu
b=$(cd "${LD_LIBRARY_PATH%%:*}/.." && pwd)
bp=$b/bin/bp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi; }
unset BACKPLANE_LAYERS BACKPLANE_TRACE_FILE || true
command -v python3 >/dev/null || { echo "SKIP: no python3 to read the trace"; exit 77; }

# 1. bp trace: the run's gemm, attention and conv2d, each a complete event
# (whether the run's checks pass is bp run's business, not the trace's).
"$bp" trace --output "$tmp/t.json" -- "$bp" run --device cpu > "$tmp/run" 2> "$tmp/err" || true
check "bp trace says where the trace is" 'grep -q "trace written to $tmp/t.json" "$tmp/err"'
check "the trace is Perfetto JSON with the run's ops" \
  'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); ev=d[\"traceEvents\"]; \
x=[e for e in ev if e[\"ph\"]==\"X\"]; names={e[\"name\"] for e in x}; \
assert {\"gemm\",\"attention\",\"conv2d\",\"random\"} <= names, names; \
assert all(e[\"dur\"] >= 0 and e[\"args\"][\"backend\"]==\"cpu\" for e in x); \
assert any(e[\"args\"][\"device\"]==\"cpu-ref\" for e in x)" "$tmp/t.json"'
rc=0; "$bp" trace --output "$tmp/f.json" -- sh -c 'exit 0' 2>/dev/null || rc=$?
check "bp trace passes the program's status (0)" '[ $rc -eq 0 ]'
rc=0; "$bp" trace --output "$tmp/f.json" -- sh -c 'exit 3' 2>/dev/null || rc=$?
check "bp trace passes the program's status (3)" '[ $rc -eq 3 ]'
rc=0; "$bp" trace --output "$tmp/f.json" 2>/dev/null || rc=$?
check "bp trace without a command is a usage error" '[ $rc -eq 2 ]'

# 2. bp run --stats: 1 warm-up and 3 timed calls of each op on cpu.
"$bp" run --device cpu --stats > "$tmp/stats" || true
check "bp run --stats counts gemm on cpu" 'grep -Eq "^ +cpu +cpu +gemm +4 +0 " "$tmp/stats"'
check "bp run --stats counts the reference's gemm" 'grep -Eq "^ +cpu +cpu-ref +gemm +1 +0 " "$tmp/stats"'
"$bp" run --device cpu --stats --json > "$tmp/json" 2> "$tmp/jerr" || true
check "bp run --stats --json keeps stdout one JSON object" 'python3 -m json.tool "$tmp/json" >/dev/null'
check "bp run --stats --json prints the table on stderr" 'grep -Eq "cpu +gemm +4 " "$tmp/jerr"'
# 3. bp devices lists the layers asked for, loaded or refused with the rule.
BACKPLANE_LAYERS=stats,nosuch "$bp" devices > "$tmp/dev"
check "bp devices lists a loaded layer" 'grep -Eq "^  stats +0\.1\.0 +.*layer-stats\.so" "$tmp/dev"'
check "bp devices lists a refused layer with its rule" 'grep -Eq "^  nosuch +REFUSED: .*LAYER-1" "$tmp/dev"'
BACKPLANE_LAYERS=stats,nosuch "$bp" devices --json > "$tmp/dev.json"
check "bp devices --json has the layers" \
  'python3 -c "import json,sys; l=json.load(open(sys.argv[1]))[\"layers\"]; \
assert [x[\"name\"] for x in l]==[\"stats\",\"nosuch\"] and l[0][\"loaded\"] and not l[1][\"loaded\"]" "$tmp/dev.json"'
exit $fail
