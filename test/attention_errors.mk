# test/attention_errors.mk: bp_attention's validation names the wrong input.
$(B)/test/test_attention_errors: $(B)/obj/test/test_attention_errors.o $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(B)/obj/test/test_attention_errors.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_attention_errors
