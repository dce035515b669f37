# test/quant_gpu.mk: the quantized ops of ABI 1.5 and the i8 / fp8 casts,
# fill and copy on the CUDA and ROCm backends (over their CPU shims, or the
# real drivers under tools/gpu-check.sh), against cpu-ref; and the kernels'
# integer f16 / fp8 code (kernels/common/bp_qcodec.h) against the CPU's.
# The plugins' manifests are prerequisites too: the loader refuses a plugin
# that does not match its manifest.
QUANT_GPU_PLUGINS := $(addprefix $(B)/plugins/backend-,cuda rocm cpu)
$(B)/test/test_quant_gpu: $(B)/obj/test/test_quant_gpu.o $(B)/obj/test/gpu_paths.o $(LIB) \
  $(QUANT_GPU_PLUGINS:=.so) $(QUANT_GPU_PLUGINS:=.json) $(CUDA_SHIM) $(HIP_SHIM) $(HIPRTC_SHIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(B)/obj/test/gpu_paths.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread -ldl
TESTS += $(B)/test/test_quant_gpu
