# test/cpu_fast_attention_amx_f32.mk: the f32 attention kernel on the bf16 AMX
# tiles (plugins/cpu/fast/attention/attention_amx_f32.c) against the plugin's
# own scalar reference, linked from the plugin's objects (test/cpu_fast.mk).
# (after test/cpu_fast.mk in the Makefile's sorted include, for CPU_ATTENTION_TEST_OBJS)
$(B)/test/test_cpu_fast_attention_amx_f32: $(B)/obj/test/test_cpu_fast_attention_amx_f32.o \
  $(CPU_ATTENTION_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_attention_amx_f32
