# test/cpu_fast_ops.mk: the "cpu" device's conv2d and memory-bound fast
# paths against the scalar reference, both linked straight from the plugin's
# objects (like test/cpu_fast.mk) so the test can force ISA and threads.
CPU_FAST_OPS_TEST_OBJS := $(filter $(B)/obj/plugins/cpu/fast/%,$(CPU_OBJS)) \
  $(addprefix $(B)/obj/plugins/cpu/,threadpool.o cpu_features.o topology.o \
    ref/ref_dnn.o ref/ref_elementwise.o ref/ref_reduce.o ref/ref_data.o)

$(B)/obj/test/test_cpu_fast_ops.o: test/test_cpu_fast_ops_conv.inc \
  test/test_cpu_fast_ops_ew.inc test/test_cpu_fast_ops_rows.inc \
  test/test_cpu_fast_ops_half.inc
$(B)/test/test_cpu_fast_ops: $(B)/obj/test/test_cpu_fast_ops.o \
  $(CPU_FAST_OPS_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_ops
