# test/quant_gpu.mk: the quantized ops of ABI 1.5 and the i8 / fp8 casts,
# fill and copy on the CUDA and ROCm backends (over their CPU shims, or the
# real drivers under tools/gpu-check.sh), against cpu-ref; and the kernels'
# integer f16 / fp8 code (kernels/common/bp_qcodec.h) against the CPU's.
$(B)/test/test_quant_gpu: $(B)/obj/test/test_quant_gpu.o $(LIB) $(B)/plugins/backend-cuda.so \
  $(B)/plugins/backend-rocm.so $(B)/plugins/backend-cpu.so $(CUDA_SHIM) $(HIP_SHIM) $(HIPRTC_SHIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread -ldl
TESTS += $(B)/test/test_quant_gpu
