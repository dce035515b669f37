# test/qgemm_fp8.mk: bp_qgemm with fp8 a and b (e4m3 / e5m2, f32 sums).
#  test_qgemm_fp8  every format pair and c dtype on cpu (AMX-BF16 tiles) and
#                  cpu-ref within docs/ops.md's tolerance of the test's own
#                  sums, views, batches, all 256 codes, the errors, and
#                  device "i8only" (test/quant_u8.mk's test plugin, no fp8
#                  claim) refusing fp8 or falling back to cpu.
$(B)/test/test_qgemm_fp8: $(B)/obj/test/test_qgemm_fp8.o $(LIB) $(B)/plugins/backend-cpu.so \
    $(B)/test/i8only-plugin/backend-i8only.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread

TESTS += $(B)/test/test_qgemm_fp8
