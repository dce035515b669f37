# test/graphs_native.mk: native graph replay where one kernel serves several
# recorded commands (two adds, the tiled GEMM's packs), on every device.
$(B)/test/test_graphs_native: $(B)/obj/test/test_graphs_native.o $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(B)/obj/test/test_graphs_native.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_graphs_native
