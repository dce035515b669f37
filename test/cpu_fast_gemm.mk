# test/cpu_fast_gemm.mk: GEMM kernel paths of the "cpu" device's fast code
# (plugins/cpu/fast/gemm/) beyond test_cpu_fast's grid, linked from the
# plugin's objects (test/cpu_fast.mk) against references of their own.
#   test_cpu_fast_gemm_f16   f16 on the AMX-BF16 tiles through exact bf16 splits
#   test_cpu_fast_gemv_axpy  y = x B (a GEMM whose C is one row), baseline and AVX-512
#   test_cpu_fast_gemm_skinny_lowp  bf16 / f16 with m <= 16 and f32 with m <= 7, B read once in place
# (after test/cpu_fast.mk in the Makefile's sorted include, for CPU_FAST_TEST_OBJS)
$(B)/test/test_cpu_fast_gemm_f16: $(B)/obj/test/test_cpu_fast_gemm_f16.o $(CPU_FAST_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_gemm_f16

# the axpy matrix-vector product (a GEMM whose C is one row), baseline and AVX-512
$(B)/test/test_cpu_fast_gemv_axpy: $(B)/obj/test/test_cpu_fast_gemv_axpy.o $(CPU_FAST_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_gemv_axpy

# bf16 / f16 with a few rows of C (one-token decode), its epilogue included
$(B)/test/test_cpu_fast_gemm_skinny_lowp: $(B)/obj/test/test_cpu_fast_gemm_skinny_lowp.o \
  $(CPU_FAST_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_gemm_skinny_lowp
