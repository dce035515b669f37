# test/cpu_fast_conv_bf16.mk: the "cpu" device's bf16 conv2d on AMX tiles
# against the scalar reference, linked straight from the plugin's objects
# (like test/cpu_fast_ops.mk) so the thread count can be forced.
CPU_FAST_CONV_BF16_TEST_OBJS := $(filter $(B)/obj/plugins/cpu/fast/%,$(CPU_OBJS)) \
  $(addprefix $(B)/obj/plugins/cpu/,threadpool.o cpu_features.o topology.o \
    ref/ref_dnn.o ref/ref_elementwise.o ref/ref_reduce.o ref/ref_data.o)

$(B)/test/test_cpu_fast_conv_bf16: $(B)/obj/test/test_cpu_fast_conv_bf16.o \
  $(CPU_FAST_CONV_BF16_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_conv_bf16
