# test/constant.mk: buffers marked constant, and the CPU backend's prepared
# weights behind them.
$(B)/test/test_constant_buffers: $(B)/obj/test/test_constant_buffers.o $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(B)/obj/test/test_constant_buffers.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_constant_buffers
# threads sharing one kept transform (make check-tsan)
TSAN_TESTS += $(B)/test/test_constant_buffers
