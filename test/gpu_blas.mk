# test/gpu_blas.mk: the vendor BLAS path (cuBLAS / rocBLAS) of the CUDA and
# ROCm backends' gemm over the BLAS shims (test/blas_shims.mk), one source
# built twice:
#  test_cuda_blas  -DBP_TEST_CUDA
#  test_rocm_blas  -DBP_TEST_ROCM
$(B)/obj/test/test_gpu_blas_cuda.o: test/test_gpu_blas.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -DBP_TEST_CUDA -MMD -MP -c $< -o $@
$(B)/obj/test/test_gpu_blas_rocm.o: test/test_gpu_blas.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -DBP_TEST_ROCM -MMD -MP -c $< -o $@

$(B)/test/test_cuda_blas: $(B)/obj/test/test_gpu_blas_cuda.o $(LIB) \
    $(CUDA_SHIM) $(CUBLAS_SHIM) $(B)/plugins/backend-cuda.so \
    $(B)/plugins/backend-cpu.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -ldl -lm -lpthread
$(B)/test/test_rocm_blas: $(B)/obj/test/test_gpu_blas_rocm.o $(LIB) \
    $(HIP_SHIM) $(HIPRTC_SHIM) $(ROCBLAS_SHIM) $(B)/plugins/backend-rocm.so \
    $(B)/plugins/backend-cpu.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -ldl -lm -lpthread

TESTS += $(B)/test/test_cuda_blas $(B)/test/test_rocm_blas
