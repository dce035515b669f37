# test/ops.mk: op, parity, API-validation and thread tests (cmocka), all
# linked against libbackplane.so and sharing test/common/ (environment,
# device tensors, comparisons, and the independent reference in ref.c).
#  test_ops_<family>   every op and dtype on "cpu" and "cpu-ref" vs ref.c
#                      (blas, dnn, norm, attention, elementwise, reduce, data)
#  test_parity         every other loaded device vs "cpu-ref"
#  test_api_validation bad arguments: status, message, nothing written
#  test_threads        concurrent streams and open/close (also under TSan)
OPS_TEST_NAMES := test_ops_blas test_ops_dnn test_ops_norm test_ops_attention \
  test_ops_elementwise test_ops_reduce test_ops_data test_parity \
  test_api_validation test_api_params test_api_handles test_threads
OPS_TEST_COMMON := $(addprefix $(B)/obj/test/common/,tc.o tc_ref.o ref.o)
OPS_TEST_BINS := $(OPS_TEST_NAMES:%=$(B)/test/%)
OPS_TEST_OBJS := $(OPS_TEST_NAMES:%=$(B)/obj/test/%.o) $(OPS_TEST_COMMON)

$(OPS_TEST_OBJS): CFLAGS_EXTRA := -Itest/common
# The reference's arithmetic is written to be evaluated as spelled (the
# exact Philox uniform check depends on it): no FMA contraction.
$(B)/obj/test/common/ref.o $(B)/obj/test/test_ops_data.o: \
  CFLAGS_EXTRA := -Itest/common -ffp-contract=off

$(OPS_TEST_BINS): $(B)/test/%: $(B)/obj/test/%.o $(OPS_TEST_COMMON) $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(OPS_TEST_COMMON) -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread

TESTS += $(OPS_TEST_BINS)
TSAN_TESTS += $(B)/test/test_threads
