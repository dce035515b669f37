#!/bin/sh
# docs/performance.md's generated tables against the JSON files they name
# (docs/perf/*.json): tools/bench_report.py --check fails when a region's
# text is not what its files give (a JSON replaced without regenerating,
# or a region edited by hand), a chart it names is missing, or a JSON file
# under docs/perf/ backs no region. Needs only Python 3 (the check draws
# nothing).
here=$(cd "$(dirname "$0")/.." && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
if python3 "$here/tools/bench_report.py" --doc "$here/docs/performance.md" --check; then
  echo "test_perf_report: docs/performance.md is what docs/perf/*.json give"
  exit 0
fi
echo "FAILED: docs/performance.md and docs/perf/ disagree (above); python3 tools/bench_report.py regenerates"
exit 1
