# test/cpu_fast_attention512.mk: the FlashAttention-2 style AVX-512 attention kernel
# (plugins/cpu/fast/attention/attention_avx512.c) against the plugin's own
# scalar reference, linked from the plugin's objects (test/cpu_fast.mk).
# (after test/cpu_fast.mk in the Makefile's sorted include, for CPU_ATTENTION_TEST_OBJS)
$(B)/test/test_cpu_fast_attention512: $(B)/obj/test/test_cpu_fast_attention512.o \
  $(CPU_ATTENTION_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_attention512
