# test/fallback.mk: automatic fallback (core/fallback.c). Two test plugins
# built from test/fixtures/partial_plugin.c (partial, and partial2 with
# -DPARTIAL_SECOND) that cannot run some ops, in a directory of their own
# so that only test_fallback (and `bp bench` when pointed at it) loads them.
PARTIAL_PLUGIN_DIR := $(B)/test/partial-plugin
PARTIAL_PLUGINS := $(PARTIAL_PLUGIN_DIR)/backend-partial.so $(PARTIAL_PLUGIN_DIR)/backend-partial2.so

$(PARTIAL_PLUGIN_DIR)/backend-partial.so: test/fixtures/partial_plugin.c plugin-api.h backplane_types.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(PLUGIN_CFLAGS) $< -o $@ $(PLUGIN_LDFLAGS) $(LDFLAGS_BASE) -lm

$(PARTIAL_PLUGIN_DIR)/backend-partial2.so: test/fixtures/partial_plugin.c plugin-api.h backplane_types.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(PLUGIN_CFLAGS) -DPARTIAL_SECOND $< -o $@ $(PLUGIN_LDFLAGS) $(LDFLAGS_BASE) -lm

$(B)/test/test_fallback: $(B)/obj/test/test_fallback.o $(LIB) $(B)/plugins/backend-cpu.so $(PARTIAL_PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread

TEST_SUPPORT += $(PARTIAL_PLUGINS)
TESTS += $(B)/test/test_fallback
