# test/schedule.mk: the graph scheduler (core/schedule*.c). It uses the
# partial test plugins that test/fallback.mk builds (PARTIAL_PLUGINS) and the
# op tests' common helpers (test/common: cpu-ref comparisons, tolerances).
SCHEDULE_TEST_COMMON := $(B)/obj/test/common/tc.o $(B)/obj/test/common/ref.o
$(B)/obj/test/test_schedule.o: CFLAGS_EXTRA := -Itest/common

$(B)/test/test_schedule: $(B)/obj/test/test_schedule.o $(SCHEDULE_TEST_COMMON) $(LIB) $(B)/plugins/backend-cpu.so \
    $(PARTIAL_PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(SCHEDULE_TEST_COMMON) -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' \
	  -lcmocka -lm -lpthread

TESTS += $(B)/test/test_schedule

# bp graph --explain on the partial test device (needs bp and the plugins).
TESTS += test/test_bp_graph.sh
