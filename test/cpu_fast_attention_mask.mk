# test/cpu_fast_attention_mask.mk: the masks of ABI 1.5 in the fused attention
# kernels (plugins/cpu/fast/attention/attention_avx512.c, attention_amx.c)
# against the plugin's own scalar reference, linked from the plugin's objects.
# (after test/cpu_fast.mk in the Makefile's sorted include, for CPU_ATTENTION_TEST_OBJS)
$(B)/test/test_cpu_fast_attention_mask: $(B)/obj/test/test_cpu_fast_attention_mask.o \
  $(CPU_ATTENTION_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_attention_mask
