# test/cpu_fast_attention_amx.mk: the bf16 attention kernel on AMX tiles
# (plugins/cpu/fast/attention/attention_amx.c) against the plugin's own
# scalar reference, linked from the plugin's objects (test/cpu_fast.mk).
# (after test/cpu_fast.mk in the Makefile's sorted include, for CPU_ATTENTION_TEST_OBJS)
$(B)/test/test_cpu_fast_attention_amx: $(B)/obj/test/test_cpu_fast_attention_amx.o \
  $(CPU_ATTENTION_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_attention_amx
