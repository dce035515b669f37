# test/fp8_saturate.mk: bp_cast_ex's BP_CAST_SATURATE beside bp_cast's
# non-saturating fp8 casts, on cpu and cpu-ref (and the refusal elsewhere).
$(B)/test/test_fp8_saturate: $(B)/obj/test/test_fp8_saturate.o $(LIB) $(B)/plugins/backend-cpu.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_fp8_saturate
