# test/blas_shims.mk: the test-only vendor BLAS shims (never installed).
#  $(B)/test/shims/cublas/libcublas.so.13   over the CUDA driver shim
#  $(B)/test/shims/rocblas/librocblas.so.4  over the HIP runtime shim
# Each links against its driver shim (same instance as the plugin's, by
# soname) and does its gemm with test/shims/common/blas_ref.c.
CUBLAS_SHIM := $(B)/test/shims/cublas/libcublas.so.13
ROCBLAS_SHIM := $(B)/test/shims/rocblas/librocblas.so.4
BLAS_SHIM_OBJS := $(B)/obj/test/shims/cublas/cublas.o \
  $(B)/obj/test/shims/rocblas/rocblas.o $(B)/obj/test/shims/common/blas_ref.o
$(BLAS_SHIM_OBJS): CFLAGS_EXTRA := -fvisibility=hidden

$(CUBLAS_SHIM): $(B)/obj/test/shims/cublas/cublas.o \
    $(B)/obj/test/shims/common/blas_ref.o $(CUDA_SHIM)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libcublas.so.13 $(LDFLAGS_BASE) -o $@ \
	  $(filter %.o,$^) $(CUDA_SHIM) -Wl,-rpath,'$$ORIGIN/../cuda' -lm
$(ROCBLAS_SHIM): $(B)/obj/test/shims/rocblas/rocblas.o \
    $(B)/obj/test/shims/common/blas_ref.o $(HIP_SHIM)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,librocblas.so.4 $(LDFLAGS_BASE) -o $@ \
	  $(filter %.o,$^) $(HIP_SHIM) -Wl,-rpath,'$$ORIGIN/../hip' -lm
TEST_SUPPORT += $(CUBLAS_SHIM) $(ROCBLAS_SHIM)
