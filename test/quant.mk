# test/quant.mk: the quantized ops of ABI 1.5 (core/backplane_quant.h).
#  test_quant  q8_0 / q4_0 / i8 quantize and dequantize, int8 GEMM, GEMM and
#              GEMV with block weights, block bounds; on cpu and cpu-ref
$(B)/test/test_quant: $(B)/obj/test/test_quant.o $(LIB) $(B)/plugins/backend-cpu.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_quant
#  test_fp8    fp8 e4m3 / e5m2 casts: all 256 codes, ties, overflow modes
$(B)/test/test_fp8: $(B)/obj/test/test_fp8.o $(LIB) $(B)/plugins/backend-cpu.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_fp8
