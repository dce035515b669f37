# test/opencl_conv.mk: the OpenCL conv2d paths (1x1 read by the tiled GEMM
# where x lies, the panel-row im2col) and attention on the flash kernel and
# on the GEMM path (issue 28, item 6), each against cpu-ref.
$(B)/obj/test/test_opencl_conv.o: CFLAGS_EXTRA := -Itest/common -Itest
# test/ops.mk, which sets OPS_TEST_COMMON, is read after this file: its
# objects are named here for the prerequisites (the recipe sees the list).
$(B)/test/test_opencl_conv: $(B)/obj/test/test_opencl_conv.o \
  $(addprefix $(B)/obj/test/common/,tc.o tc_ref.o ref.o) $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(OPS_TEST_COMMON) -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_opencl_conv
