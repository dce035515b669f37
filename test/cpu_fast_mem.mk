# test/cpu_fast_mem.mk: the memory-bound fast paths' streaming stores and
# cached rows against the reference, linked straight from the plugin's
# objects (like test/cpu_fast_ops.mk) so the test can force the threshold.
CPU_FAST_MEM_TEST_OBJS := $(filter $(B)/obj/plugins/cpu/fast/%,$(CPU_OBJS)) \
  $(addprefix $(B)/obj/plugins/cpu/,threadpool.o cpu_features.o topology.o \
    ref/ref_dnn.o ref/ref_elementwise.o ref/ref_reduce.o ref/ref_data.o)

$(B)/test/test_cpu_fast_mem: $(B)/obj/test/test_cpu_fast_mem.o \
  $(CPU_FAST_MEM_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_mem
