# test/cpu_fast_conv_layout.mk: the "cpu" device's conv2d over channels-last
# and other non-dense layouts (fast/conv/conv2d_relayout.c) against the
# scalar reference, linked straight from the plugin's objects (like
# test/cpu_fast_conv_bf16.mk) so the ISA level and thread count can be forced.
$(B)/test/test_cpu_fast_conv_layout: $(B)/obj/test/test_cpu_fast_conv_layout.o \
  $(CPU_FAST_CONV_BF16_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_cpu_fast_conv_layout
