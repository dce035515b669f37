# test/model.mk: the GPT-2-style and Llama-style model of tools/model on
# every device (the CUDA and ROCm plugins over their CPU shims), against
# cpu-ref, with graph capture and replay of the whole forward.
MODEL_OBJS := $(B)/obj/tools/model/model.o $(B)/obj/tools/model/model_forward.o
$(B)/test/test_model: $(B)/obj/test/test_model.o $(MODEL_OBJS) $(LIB) $(PLUGINS) \
  $(CUDA_SHIM) $(CUBLAS_SHIM) $(HIP_SHIM) $(HIPRTC_SHIM) $(ROCBLAS_SHIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(B)/obj/test/test_model.o $(MODEL_OBJS) -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_model
