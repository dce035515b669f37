# test/quant_vulkan.mk: the quantized ops of backend-vulkan.so against cpu-ref.
#  test_quant_vulkan  quantize / dequantize (q8_0, q4_0, i8 from and to f32,
#                     f16, bf16), int8 GEMM (exact), qmatmul, i8 / fp8 copy
#                     and casts, a captured graph;
#                     every kernel path (8-bit storage or words, integer dot
#                     product or widening); skips without a Vulkan device
$(B)/test/test_quant_vulkan: $(B)/obj/test/test_quant_vulkan.o $(LIB) $(B)/plugins/backend-cpu.so \
  $(B)/plugins/backend-cpu.json $(B)/plugins/backend-vulkan.json \
  $(B)/plugins/backend-vulkan.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_quant_vulkan
