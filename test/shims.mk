# test/shims.mk: what the CUDA and ROCm backends share in their tests (read
# after test/cuda.mk and test/rocm.mk, whose shim variables it uses):
#  $(B)/test/shims/cublas/libcublas.so.13   test-only cuBLAS over the CUDA
#                                           driver shim
#  $(B)/test/shims/rocblas/librocblas.so.4  test-only rocBLAS over the HIP
#                                           runtime shim
#  test_cuda_graphs / test_rocm_graphs   native graphs (test_gpu_graphs.c)
#  test_cuda_blas / test_rocm_blas       vendor BLAS gemm (test_gpu_blas.c)
#  test_cuda_runtime / test_rocm_runtime memory, copies, streams, events
#                                        (test_gpu_runtime.c)
# Each BLAS shim links against its driver shim (the same instance as the
# plugin's, by soname) and does its gemm with test/shims/common/blas_ref.c.
# Each test source is built twice, with -DBP_TEST_CUDA and -DBP_TEST_ROCM.
CUBLAS_SHIM := $(B)/test/shims/cublas/libcublas.so.13
ROCBLAS_SHIM := $(B)/test/shims/rocblas/librocblas.so.4
BLAS_SHIM_OBJS := $(B)/obj/test/shims/cublas/cublas.o \
  $(B)/obj/test/shims/rocblas/rocblas.o $(B)/obj/test/shims/common/blas_ref.o \
  $(B)/obj/test/shims/common/env.o
$(BLAS_SHIM_OBJS): CFLAGS_EXTRA := -fvisibility=hidden

$(CUBLAS_SHIM): $(B)/obj/test/shims/cublas/cublas.o \
    $(B)/obj/test/shims/common/blas_ref.o $(B)/obj/test/shims/common/env.o \
    $(CUDA_SHIM)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libcublas.so.13 $(LDFLAGS_BASE) -o $@ \
	  $(filter %.o,$^) $(CUDA_SHIM) -Wl,-rpath,'$$ORIGIN/../cuda' -lm
$(ROCBLAS_SHIM): $(B)/obj/test/shims/rocblas/rocblas.o \
    $(B)/obj/test/shims/common/blas_ref.o $(B)/obj/test/shims/common/env.o \
    $(HIP_SHIM)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,librocblas.so.4 $(LDFLAGS_BASE) -o $@ \
	  $(filter %.o,$^) $(HIP_SHIM) -Wl,-rpath,'$$ORIGIN/../hip' -lm
TEST_SUPPORT += $(CUBLAS_SHIM) $(ROCBLAS_SHIM)

$(B)/obj/test/test_gpu_graphs_cuda.o: test/test_gpu_graphs.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -DBP_TEST_CUDA -MMD -MP -MT '$$(B)/$(patsubst $(B)/%,%,$@)' -c $< -o $@
$(B)/obj/test/test_gpu_graphs_rocm.o: test/test_gpu_graphs.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -DBP_TEST_ROCM -MMD -MP -MT '$$(B)/$(patsubst $(B)/%,%,$@)' -c $< -o $@

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
# A second thread does null-stream work while graphs are captured.
TSAN_TESTS += $(B)/test/test_cuda_graphs $(B)/test/test_rocm_graphs

$(B)/obj/test/test_gpu_blas_cuda.o: test/test_gpu_blas.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -DBP_TEST_CUDA -MMD -MP -MT '$$(B)/$(patsubst $(B)/%,%,$@)' -c $< -o $@
$(B)/obj/test/test_gpu_blas_rocm.o: test/test_gpu_blas.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -DBP_TEST_ROCM -MMD -MP -MT '$$(B)/$(patsubst $(B)/%,%,$@)' -c $< -o $@

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

$(B)/obj/test/test_gpu_runtime_cuda.o: test/test_gpu_runtime.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -DBP_TEST_CUDA -MMD -MP -MT '$$(B)/$(patsubst $(B)/%,%,$@)' -c $< -o $@
$(B)/obj/test/test_gpu_runtime_rocm.o: test/test_gpu_runtime.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -DBP_TEST_ROCM -MMD -MP -MT '$$(B)/$(patsubst $(B)/%,%,$@)' -c $< -o $@

$(B)/test/test_cuda_runtime: $(B)/obj/test/test_gpu_runtime_cuda.o $(LIB) \
    $(CUDA_SHIM) $(B)/plugins/backend-cuda.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -ldl -lm -lpthread
$(B)/test/test_rocm_runtime: $(B)/obj/test/test_gpu_runtime_rocm.o $(LIB) \
    $(HIP_SHIM) $(HIPRTC_SHIM) $(B)/plugins/backend-rocm.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -ldl -lm -lpthread

TESTS += $(B)/test/test_cuda_runtime $(B)/test/test_rocm_runtime
