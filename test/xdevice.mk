# test/xdevice.mk: data and ordering between devices (test_xdevice): the
# copy matrix over every ordered pair of the devices present (cpu, cpu-ref,
# opencl, vulkan and the CUDA / ROCm shims), sync and async, odd sizes and
# offsets; the staged pipeline between the shims; bad input refused with
# nothing written; event chains across three devices.
$(B)/obj/test/test_xdevice.o: CFLAGS_EXTRA := -Itest
$(B)/test/test_xdevice: $(B)/obj/test/test_xdevice.o $(LIB) $(PLUGINS) $(CUDA_SHIM) $(HIP_SHIM) $(HIPRTC_SHIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lpthread

TESTS += $(B)/test/test_xdevice

# For test_abi_compat: the serial test plugin with mem_map set and mem_unmap
# not (the pair rule, docs/plugin-abi.md 5.1), which the loader refuses.
HALFMAP_PLUGIN := $(B)/test/halfmap-plugin/backend-serial.so
$(HALFMAP_PLUGIN): test/fixtures/serial_plugin.c plugin-api.h backplane_types.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -DSERIAL_HALF_MAP $(PLUGIN_CFLAGS) $< -o $@ $(PLUGIN_LDFLAGS) $(LDFLAGS_BASE)
$(B)/test/test_abi_compat: $(HALFMAP_PLUGIN)
TEST_SUPPORT += $(HALFMAP_PLUGIN)
