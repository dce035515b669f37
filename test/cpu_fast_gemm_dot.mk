# test/cpu_fast_gemm_dot.mk: the inner-product GEMM route and the matrix-vector
# forms beside it, linked from the plugin's objects
# (CPU_FAST_TEST_OBJS, test/cpu_fast.mk, included before this file).
$(B)/test/test_cpu_fast_gemm_dot: $(B)/obj/test/test_cpu_fast_gemm_dot.o $(CPU_FAST_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_gemm_dot
# the route splits its tasks over two threads: under ThreadSanitizer too
TSAN_TESTS += $(B)/test/test_cpu_fast_gemm_dot
