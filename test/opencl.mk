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

#  test_opencl         every claimed op through the public API vs cpu-ref
$(B)/obj/test/test_opencl.o: CFLAGS_EXTRA := -Itest/common
$(B)/obj/test/test_opencl.o: test/test_opencl_ops.inc test/test_opencl_dnn.inc
$(B)/test/test_opencl: $(B)/obj/test/test_opencl.o $(B)/obj/test/common/tc.o \
    $(B)/obj/test/common/ref.o $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(B)/obj/test/common/tc.o \
	  $(B)/obj/test/common/ref.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_opencl

# make bench-opencl: ours vs CLBlast on the first OpenCL device, 512..2048.
.PHONY: bench-opencl
bench-opencl: $(B)/test/test_opencl_bench
	sh tools/deps.sh bench
	BACKPLANE_PLUGIN_PATH=$(B)/plugins $(B)/test/test_opencl_bench 512 1024 2048
