# test/model_ops.mk: the model ops of ABI 1.5 (core/backplane_model.h).
#  test_model_ops          gather, arange, binary with a scalar, tanh GELU,
#                          GLU, RoPE on every device vs a double reference
#  test_model_ops_compose  narrow / concat / KV append on every device, and
#                          graph capture and replay of a sequence of them
#  test_model_ops_errors   every argument check, nothing written
# The CUDA and ROCm plugins take part over their CPU shims (as test_model).
MODEL_OPS_TEST_NAMES := test_model_ops test_model_ops_compose test_model_ops_errors
MODEL_OPS_COMMON := $(B)/obj/test/model_ops_harness.o $(B)/obj/test/common/tc.o \
  $(B)/obj/test/common/ref.o
MODEL_OPS_BINS := $(MODEL_OPS_TEST_NAMES:%=$(B)/test/%)

$(MODEL_OPS_TEST_NAMES:%=$(B)/obj/test/%.o) $(B)/obj/test/model_ops_harness.o: \
  CFLAGS_EXTRA := -Itest/common -Itest

$(MODEL_OPS_BINS): $(B)/test/%: $(B)/obj/test/%.o $(MODEL_OPS_COMMON) $(LIB) $(PLUGINS) \
  $(CUDA_SHIM) $(CUBLAS_SHIM) $(HIP_SHIM) $(HIPRTC_SHIM) $(ROCBLAS_SHIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(MODEL_OPS_COMMON) -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread -ldl

TESTS += $(MODEL_OPS_BINS)

# Binary with a scalar composed by the core on the partial2 test plugin
# (test/fallback.mk builds it), which runs bp_binary but not the new op.
$(B)/test/test_model_ops_composed: $(B)/obj/test/test_model_ops_composed.o $(LIB) \
  $(B)/plugins/backend-cpu.so $(PARTIAL_PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_model_ops_composed
