# test/opencl_fused.mk: the OpenCL paths of the GEMM epilogue and the
# attention masks (issue 28) that the shared suites' small cases miss: the
# skinny and batched tiled GEMMs, attention on the tuned GEMM and the
# decode kernel, each against cpu-ref, and their native graph replay.
$(B)/obj/test/test_opencl_fused.o: CFLAGS_EXTRA := -Itest/common -Itest
# test/ops.mk, which sets OPS_TEST_COMMON, is read after this file: its
# objects are named here for the prerequisites (the recipe sees the list).
$(B)/test/test_opencl_fused: $(B)/obj/test/test_opencl_fused.o \
  $(addprefix $(B)/obj/test/common/,tc.o tc_ref.o ref.o) $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(OPS_TEST_COMMON) -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_opencl_fused
