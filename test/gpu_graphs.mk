# test/gpu_graphs.mk: native graphs (stream capture) of the CUDA and ROCm
# backends over their CPU shims, one source built twice:
#  test_cuda_graphs  -DBP_TEST_CUDA   (test/shims/cuda)
#  test_rocm_graphs  -DBP_TEST_ROCM   (test/shims/hip)
$(B)/obj/test/test_gpu_graphs_cuda.o: test/test_gpu_graphs.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -DBP_TEST_CUDA -MMD -MP -c $< -o $@
$(B)/obj/test/test_gpu_graphs_rocm.o: test/test_gpu_graphs.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -DBP_TEST_ROCM -MMD -MP -c $< -o $@

$(B)/test/test_cuda_graphs: $(B)/obj/test/test_gpu_graphs_cuda.o $(LIB) \
    $(CUDA_SHIM) $(CUBLAS_SHIM) $(B)/plugins/backend-cuda.so \
    $(B)/plugins/backend-cpu.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -ldl -lm -lpthread
$(B)/test/test_rocm_graphs: $(B)/obj/test/test_gpu_graphs_rocm.o $(LIB) \
    $(HIP_SHIM) $(HIPRTC_SHIM) $(ROCBLAS_SHIM) $(B)/plugins/backend-rocm.so \
    $(B)/plugins/backend-cpu.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -ldl -lm -lpthread

TESTS += $(B)/test/test_cuda_graphs $(B)/test/test_rocm_graphs
