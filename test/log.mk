# test/log.mk: the log API (test_log): bp_log_set_handler receives lines with
# their level and category, bp_log_set_level filters them, NULL restores
# stderr, and an unknown BACKPLANE_DEBUG word warns exactly once.
$(B)/test/test_log: $(B)/obj/test/test_log.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lpthread

TESTS += $(B)/test/test_log
TSAN_TESTS += $(B)/test/test_log
