# test/runtime.mk: the shared runtime features — memory pool, graphs, custom
# kernels (with a kernel library built from test/fixtures).
$(B)/test/fixtures/libsaxpy.so: test/fixtures/saxpy_kernel.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -shared -o $@ $<

$(B)/test/test_runtime: $(B)/obj/test/test_runtime.o $(LIB) $(PLUGINS) $(B)/test/fixtures/libsaxpy.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(B)/obj/test/test_runtime.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_runtime

# Captured graphs on every device present, native where the backend has them.
$(B)/test/test_graphs: $(B)/obj/test/test_graphs.o $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(B)/obj/test/test_graphs.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_graphs
