# test/qgemm_u8_gpu.mk: u8 operands of the quantized ops on the GPU
# backends.
#  test_qgemm_u8_gpu  qgemm with a and b each i8 or u8 (c i32, f32, i8) and
#                     quantize / dequantize u8 on every OpenCL, Vulkan,
#                     CUDA and ROCm device (the last two over their CPU
#                     shims here), each kernel path, bit-exact against
#                     cpu-ref; skips with no such device
$(B)/test/test_qgemm_u8_gpu: $(B)/obj/test/test_qgemm_u8_gpu.o \
  $(B)/obj/test/gpu_paths.o $(LIB) $(PLUGINS) $(MANIFESTS) \
  $(CUDA_SHIM) $(HIP_SHIM) $(HIPRTC_SHIM)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(B)/obj/test/gpu_paths.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread -ldl
TESTS += $(B)/test/test_qgemm_u8_gpu
