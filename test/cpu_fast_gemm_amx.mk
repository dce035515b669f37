# test/cpu_fast_gemm_amx.mk: the bf16 GEMM driver on AMX tiles
# (plugins/cpu/fast/gemm/gemm_amx.c) called directly, against a double
# reference: ragged tiles, k blocks, task grid, views, beta, epilogue.
# (after test/cpu_fast.mk in the Makefile's sorted include, for CPU_FAST_TEST_OBJS)
$(B)/test/test_cpu_fast_gemm_amx: $(B)/obj/test/test_cpu_fast_gemm_amx.o $(CPU_FAST_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_gemm_amx
# the two-phase pool run (claimed pieces, then claimed tasks)
TSAN_TESTS += $(B)/test/test_cpu_fast_gemm_amx
