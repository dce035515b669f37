# test/qgemm_u8.mk: bp_qgemm with u8 operands (a and b each i8 or u8).
#  test_qgemm_u8  the cpu device's fast paths (AMX tiles, AVX512-VNNI, AVX2)
#                 bit-exact against the scalar reference for all four pairs,
#                 linked from the plugin's objects like test_qgemm_amx
#                 (after test/cpu_fast.mk in the Makefile's sorted include)
$(B)/test/test_qgemm_u8: $(B)/obj/test/test_qgemm_u8.o $(QGEMM_AMX_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_qgemm_u8
