# test/cpu_fast.mk: the "cpu" device's fast paths (plugins/cpu/fast/)
# linked straight from the plugin's objects, so the test can force each ISA
# level and thread count, against a double-precision reference of its own.
CPU_FAST_TEST_OBJS := $(filter $(B)/obj/plugins/cpu/fast/%,$(CPU_OBJS)) \
  $(B)/obj/plugins/cpu/threadpool.o $(B)/obj/plugins/cpu/cpu_features.o \
  $(B)/obj/plugins/cpu/topology.o

$(B)/test/test_cpu_fast: $(B)/obj/test/test_cpu_fast.o $(CPU_FAST_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast
# the GEMM team driver's counters and shared panels
TSAN_TESTS += $(B)/test/test_cpu_fast

# The fused attention kernels against the plugin's own scalar reference,
# through the harness the attention kernel tests share.
CPU_ATTENTION_TEST_OBJS := $(CPU_FAST_TEST_OBJS) $(B)/obj/test/attention_harness.o \
  $(B)/obj/plugins/cpu/ref/ref_attention.o
$(B)/test/test_cpu_fast_attention: $(B)/obj/test/test_cpu_fast_attention.o \
  $(CPU_ATTENTION_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_attention
