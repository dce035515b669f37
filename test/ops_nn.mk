# test/ops_nn.mk: GEMM epilogues, attention masks and N-d matmul (ABI 1.5,
# issue 28), with test/common/ like test/ops.mk's suites.
#  test_gemm_epilogue  bias / activation / residual on every device, and
#                      composed by the core on the plaingemm test plugin
#                      (test/fixtures/plain_gemm_plugin.c)
#  test_attention_mask key lengths, sliding window, bias, ALiBi
#  test_matmul_nd      N-d batch broadcasting, rank-1 operands, errors
OPS_NN_TEST_NAMES := test_gemm_epilogue test_attention_mask test_matmul_nd
OPS_NN_TEST_BINS := $(OPS_NN_TEST_NAMES:%=$(B)/test/%)
OPS_NN_TEST_OBJS := $(OPS_NN_TEST_NAMES:%=$(B)/obj/test/%.o)
# The plugin is linked without plugins/plugin.map: the test reads its call
# counters (plain_gemm_calls) with dlsym.
PLAIN_GEMM_PLUGIN := $(B)/test/plain-gemm-plugin/backend-plaingemm.so

$(OPS_NN_TEST_OBJS) $(B)/obj/test/nn_harness.o: CFLAGS_EXTRA := -Itest/common -Itest

$(PLAIN_GEMM_PLUGIN): test/fixtures/plain_gemm_plugin.c plugin-api.h backplane_types.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(PLUGIN_CFLAGS) $< -o $@ -shared $(LDFLAGS_BASE) -lm

# Group cases plant calibration times with test_group's cache helpers;
# nn_harness.c holds the device loop and group setup the suites share.
OPS_NN_TEST_COMMON := $(OPS_TEST_COMMON) $(B)/obj/test/test_group_cache.o \
  $(B)/obj/test/nn_harness.o
$(OPS_NN_TEST_BINS): $(B)/test/%: $(B)/obj/test/%.o $(OPS_NN_TEST_COMMON) $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(OPS_NN_TEST_COMMON) -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread -ldl

$(B)/test/test_gemm_epilogue: $(PLAIN_GEMM_PLUGIN)
TEST_SUPPORT += $(PLAIN_GEMM_PLUGIN)
TESTS += $(OPS_NN_TEST_BINS)
