# test/gemm_paths.mk: attention, conv2d and skinny GEMM on the OpenCL and
# Vulkan backends' tuned GEMM tiles (issue 28, item 6) against cpu-ref.
$(B)/obj/test/test_gemm_paths.o: CFLAGS_EXTRA := -Itest/common
$(B)/test/test_gemm_paths: $(B)/obj/test/test_gemm_paths.o $(B)/obj/test/common/tc.o \
    $(B)/obj/test/common/ref.o $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(B)/obj/test/common/tc.o \
	  $(B)/obj/test/common/ref.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_gemm_paths
