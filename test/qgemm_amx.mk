# test/qgemm_amx.mk: the int8 GEMM on AMX-INT8 tiles
# (plugins/cpu/fast/quant/qgemm_amx.c) and the run-time choice of the int8
# GEMM's path, bit-exact against the plugin's scalar reference, linked from
# the plugin's objects (after test/cpu_fast.mk in the Makefile's sorted
# include, for CPU_FAST_TEST_OBJS; qmatmul's objects, which call into the
# plugin's glue, are left out).
QGEMM_AMX_TEST_OBJS := $(filter-out $(B)/obj/plugins/cpu/fast/quant/qmatmul%,$(CPU_FAST_TEST_OBJS)) \
  $(B)/obj/plugins/cpu/ref/ref_quant.o
$(B)/test/test_qgemm_amx: $(B)/obj/test/test_qgemm_amx.o $(QGEMM_AMX_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lm -lpthread -ldl

TESTS += $(B)/test/test_qgemm_amx
