# test/ops_model_gpu.mk: the model ops of ABI 1.5 on the GPU backends
# (OpenCL, Vulkan, and CUDA and ROCm over their CPU shims): every op
# eagerly and in a captured graph, native where the backend records
# natively, and the integer paths of arange and gather.
$(B)/test/test_ops_model_gpu: $(B)/obj/test/test_ops_model_gpu.o $(LIB) $(PLUGINS) \
  $(CUDA_SHIM) $(CUBLAS_SHIM) $(HIP_SHIM) $(HIPRTC_SHIM) $(ROCBLAS_SHIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread -ldl
TESTS += $(B)/test/test_ops_model_gpu
