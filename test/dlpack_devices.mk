# test/dlpack_devices.mk: DLPack on every backend that has a DLPack device.
#  test_dlpack_devices  export and import on CUDA (kDLCUDA) and ROCm
#                       (kDLROCM) through their CPU shims and on the CPU
#                       (kDLCPU): one memory seen through both handles, an op
#                       on the import, the deleter on free, the versioned and
#                       older capsules; import on any other device refused;
#                       OpenCL and Vulkan (opaque memory) refuse export
# The shims' paths are spelled out: cuda.mk and rocm.mk define their
# variables, and rocm.mk is read after this file.
$(B)/obj/test/test_dlpack_devices.o: CFLAGS_EXTRA := -Itest/common -Itest
$(B)/test/test_dlpack_devices: $(B)/obj/test/test_dlpack_devices.o $(LIB) \
    $(B)/test/shims/cuda/libcuda.so.1 $(B)/test/shims/hip/libamdhip64.so \
    $(B)/test/shims/hip/libhiprtc.so $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -ldl -lm -lpthread
TESTS += $(B)/test/test_dlpack_devices
