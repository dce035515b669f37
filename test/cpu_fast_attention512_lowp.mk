# test/cpu_fast_attention512_lowp.mk: the AVX-512 attention kernel
# (plugins/cpu/fast/attention/attention_avx512.c) on bf16 and f16 tensors
# against the plugin's own scalar reference, linked from the plugin's
# objects (test/cpu_fast.mk).
# (after test/cpu_fast.mk in the Makefile's sorted include, for CPU_ATTENTION_TEST_OBJS)
$(B)/test/test_cpu_fast_attention512_lowp: $(B)/obj/test/test_cpu_fast_attention512_lowp.o \
  $(CPU_ATTENTION_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_attention512_lowp
