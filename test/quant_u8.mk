# test/quant_u8.mk: u8 in the quantized ops through the public API.
#  test_quant_u8  bp_qgemm's four i8 / u8 pairs and u8 quantize / dequantize
#                 on cpu and cpu-ref, the errors, and device "i8only" (the
#                 test plugin test/fixtures/i8only_plugin.c, claiming i8
#                 only) refused a u8 operand, or falling back to cpu. The
#                 plugin sits in a directory of its own so that only this
#                 test loads it.
I8ONLY_PLUGIN := $(B)/test/i8only-plugin/backend-i8only.so

$(I8ONLY_PLUGIN): test/fixtures/i8only_plugin.c plugin-api.h plugin-api-1.5.h backplane_types.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(PLUGIN_CFLAGS) $< -o $@ $(PLUGIN_LDFLAGS) $(LDFLAGS_BASE) -lm

$(B)/test/test_quant_u8: $(B)/obj/test/test_quant_u8.o $(LIB) $(B)/plugins/backend-cpu.so $(I8ONLY_PLUGIN)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread

TEST_SUPPORT += $(I8ONLY_PLUGIN)
TESTS += $(B)/test/test_quant_u8
