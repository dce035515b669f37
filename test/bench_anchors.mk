# test/bench_anchors.mk: bp bench's library anchors, and the venv `make bench`
# installs them into.
#
#  test_bench_anchors  an absent anchor (not installed, or pip could not get
#                      it) is reported as absent with why, never as a ratio;
#                      an OpenBLAS on a lesser kernel is marked not comparable
#                      (bp bench --quick --op gemm; no network, no venv needed)
$(B)/test/test_bench_anchors: test/test_bench_anchors.c test/skip.h $(B)/bin/bp $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -o $@ $< $(LDFLAGS_BASE) -lcmocka -ldl
TESTS += $(B)/test/test_bench_anchors

# make bench first fills $(B)/bench-venv from PyPI with the anchors bp bench
# finds there (bench_anchor_set.c): Intel MKL, oneDNN's CPU build and a
# current OpenBLAS. A package pip cannot get leaves its reason in
# $(B)/bench-venv/missing-PACKAGE.txt, which bp bench prints; the run goes on.
BENCH_VENV_PACKAGES := mkl onednn-cpu-gomp scipy-openblas32
.PHONY: bench-anchors
bench: bench-anchors
bench-anchors:
	@sh tools/bench_venv.sh $(B)/bench-venv $(BENCH_VENV_PACKAGES)
