# test/quant_ocl.mk: the quantized ops of ABI 1.5 on the OpenCL backend.
#  test_quant_ocl  quantize / dequantize (q8_0, q4_0, i8), qgemm (i32, f32,
#                  i8 out), qmatmul (GEMV and tiled), i8 / fp8 casts and
#                  copies: every claim against cpu-ref, fallback off
$(B)/test/test_quant_ocl: $(B)/obj/test/test_quant_ocl.o $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_quant_ocl
