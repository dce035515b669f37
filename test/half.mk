# test/half.mk: kernels/common/bp_half.h, the one host f16 / bf16 conversion
# (test_half), and the same test built with -mf16c so that the F16C path is
# checked against the portable one (test_half_f16c; skips without F16C).
$(B)/test/test_half: $(B)/obj/test/test_half.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -lcmocka -lm

$(B)/obj/test/test_half_f16c.o: test/test_half.c kernels/common/bp_half.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -mf16c -c $< -o $@

$(B)/test/test_half_f16c: $(B)/obj/test/test_half_f16c.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -lcmocka -lm

TESTS += $(B)/test/test_half $(B)/test/test_half_f16c
