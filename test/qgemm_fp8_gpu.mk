# test/qgemm_fp8_gpu.mk: bp_qgemm with fp8 a and b on the GPU backends.
#  test_qgemm_fp8_gpu  every e4m3 / e5m2 pair x c dtype (f32, f16, bf16),
#                      scales, views, batches and all 256 codes on every
#                      OpenCL, Vulkan, CUDA and ROCm device (the last two
#                      over their CPU shims here), within docs/ops.md's
#                      tolerance of the test's own sums and of cpu-ref;
#                      skips with no such device
$(B)/test/test_qgemm_fp8_gpu: $(B)/obj/test/test_qgemm_fp8_gpu.o \
  $(B)/obj/test/gpu_paths.o $(LIB) $(PLUGINS) $(MANIFESTS) \
  $(CUDA_SHIM) $(HIP_SHIM) $(HIPRTC_SHIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(B)/obj/test/gpu_paths.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread -ldl
TESTS += $(B)/test/test_qgemm_fp8_gpu
