# test/tuning.mk: the autotuning cache (core/tuning.c), reached through the
# host services of a fixture plugin built from test/fixtures/tune_plugin.c.
# The fixture lives in $(B)/test/fixtures, outside the default search path.
$(B)/test/fixtures/backend-tune.so: test/fixtures/tune_plugin.c plugin-api.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -shared -fvisibility=hidden -o $@ $<

$(B)/test/test_tuning: $(B)/obj/test/test_tuning.o $(LIB) $(B)/test/fixtures/backend-tune.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lpthread -ldl
TESTS += $(B)/test/test_tuning
TSAN_TESTS += $(B)/test/test_tuning
