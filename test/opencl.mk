# test/opencl.mk: the OpenCL backend's tests.
#  test_opencl_plugin  drives backend-opencl.so through its descriptor
$(B)/test/test_opencl_plugin: test/test_opencl_plugin.c test/test_opencl_util.h \
    test/test_opencl_plugin_gemm.inc $(B)/plugins/backend-opencl.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -Itest -o $@ $< $(LDFLAGS_BASE) -lcmocka -ldl -lm
TESTS += $(B)/test/test_opencl_plugin

# Bench (not in TESTS): ours vs CLBlast, both through dlopen.
$(B)/test/test_opencl_bench: test/test_opencl_bench.c test/test_opencl_util.h \
    $(B)/plugins/backend-opencl.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -Itest -o $@ $< $(LDFLAGS_BASE) -ldl
TEST_SUPPORT += $(B)/test/test_opencl_bench
