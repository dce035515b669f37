# test/manifest.mk: plugin manifests (core/manifest.c) and the core's JSON
# reader; the fixture plugin aborts in its constructor, so a test that
# survives proved the loader refused it before dlopen.
$(B)/test/fixtures/backend-ctorabort.so: test/fixtures/ctor_abort_plugin.c plugin-api.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -shared -fvisibility=hidden -o $@ $<

$(B)/obj/test/test_manifest.o: CFLAGS_EXTRA := -Itest
$(B)/test/test_manifest: $(B)/obj/test/test_manifest.o $(LIB) $(B)/test/fixtures/backend-ctorabort.so \
    $(MANIFEST_GEN) $(BROKEN_DIR)/backend-good.so $(B)/plugins/backend-cpu.so $(B)/plugins/backend-cpu.json
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lpthread
TESTS += $(B)/test/test_manifest

# bp devices --no-load and bp conformance's manifest check.
TESTS += test/test_bp_manifest.sh
