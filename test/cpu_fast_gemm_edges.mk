# test/cpu_fast_gemm_edges.mk: C's last rows on the AVX-512 GEMM (shorter
# kernels for panels under MR rows), linked from the plugin's objects
# (CPU_FAST_TEST_OBJS, test/cpu_fast.mk, included before this file).
$(B)/test/test_cpu_fast_gemm_edges: $(B)/obj/test/test_cpu_fast_gemm_edges.o $(CPU_FAST_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_gemm_edges
