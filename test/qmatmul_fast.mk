# test/qmatmul_fast.mk: bp_qmatmul's fast paths on "cpu" (plugins/cpu/fast/
# quant/qmatmul*.c: int8 activations on AVX512-VNNI and AVX2, the f32 path)
# against double sums and cpu-ref: GEMV / GEMM shapes, tails, batches,
# strides, f16 / bf16 activations, q8_0 and q4_0, the k split.
$(B)/test/test_qmatmul_fast: $(B)/obj/test/test_qmatmul_fast.o $(LIB) $(B)/plugins/backend-cpu.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_qmatmul_fast
