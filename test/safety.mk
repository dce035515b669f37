# test/safety.mk: memory safety of the handle layer (test_api_safety):
# graphs over freed buffers, stale handles, bp_device_close under running
# work, overflowing window parameters, and calls on one stream never
# overlapping inside a plugin. The last uses a test plugin that reports any
# overlap (test/fixtures/serial_plugin.c), built into its own directory so
# that only this test loads it.
SERIAL_PLUGIN := $(B)/test/serial-plugin/backend-serial.so

$(SERIAL_PLUGIN): test/fixtures/serial_plugin.c plugin-api.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(PLUGIN_CFLAGS) $< -o $@ $(PLUGIN_LDFLAGS) $(LDFLAGS_BASE)

$(B)/test/test_api_safety: $(B)/obj/test/test_api_safety.o $(LIB) $(B)/plugins/backend-cpu.so $(SERIAL_PLUGIN)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lpthread

TEST_SUPPORT += $(SERIAL_PLUGIN)
TESTS += $(B)/test/test_api_safety
TSAN_TESTS += $(B)/test/test_api_safety
