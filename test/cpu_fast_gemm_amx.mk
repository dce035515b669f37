# test/cpu_fast_gemm_amx.mk: the bf16 GEMM driver (plugins/cpu/fast/gemm/
# gemm_amx.c) called directly with each block product, AMX tiles and
# VDPBF16PS (gemm_dpbf16.c, wherever the CPU has AVX512-BF16), against a
# double reference: ragged tiles, k blocks, odd k, task grid, views, beta,
# epilogue; and cpu_fast_gemm_lowp's choice of the VDPBF16PS route.
# (after test/cpu_fast.mk in the Makefile's sorted include, for CPU_FAST_TEST_OBJS)
$(B)/test/test_cpu_fast_gemm_amx: $(B)/obj/test/test_cpu_fast_gemm_amx.o $(CPU_FAST_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_gemm_amx
# the two-phase pool run (claimed pieces, then claimed tasks)
TSAN_TESTS += $(B)/test/test_cpu_fast_gemm_amx
