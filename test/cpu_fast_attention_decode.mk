# test/cpu_fast_attention_decode.mk: the attention kernel for a few queries
# per head (plugins/cpu/fast/attention/attention_decode.c, one-token decode)
# against the plugin's own scalar reference, linked from the plugin's
# objects (test/cpu_fast.mk).
# (after test/cpu_fast.mk in the Makefile's sorted include, for CPU_ATTENTION_TEST_OBJS)
$(B)/test/test_cpu_fast_attention_decode: $(B)/obj/test/test_cpu_fast_attention_decode.o \
  $(CPU_ATTENTION_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_attention_decode
