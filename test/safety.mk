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

# The same plugin built against the ABI 1.2 header, from before the op table
# generated the descriptor's slots: test_abi_compat proves the layout held.
ABI12_PLUGIN := $(B)/test/abi-1.2-plugin/backend-serial.so

$(ABI12_PLUGIN): test/fixtures/serial_plugin.c test/fixtures/abi-1.2/plugin-api.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -I.,$(CFLAGS_BASE)) -Itest/fixtures/abi-1.2 $(PLUGIN_CFLAGS) $< -o $@ \
	  $(PLUGIN_LDFLAGS) $(LDFLAGS_BASE)

$(B)/test/test_abi_compat: $(B)/obj/test/test_abi_compat.o $(LIB) $(ABI12_PLUGIN)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lpthread

TEST_SUPPORT += $(ABI12_PLUGIN)
TESTS += $(B)/test/test_abi_compat
