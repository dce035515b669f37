# test/perf_report.mk: docs/performance.md's generated tables.
#  test_perf_report  each region between the bench_report.py markers is
#                    what the docs/perf/*.json files it names give
TESTS += test/test_perf_report.sh
