# test/vulkan_model_texel.mk: binary_scalar and GLU on the Vulkan texel
# path (scalar_f32_tex, glu_f32_tex) against a double reference.
$(B)/obj/test/test_vulkan_model_texel.o: CFLAGS_EXTRA := -Itest/common -Itest
$(B)/test/test_vulkan_model_texel: $(B)/obj/test/test_vulkan_model_texel.o \
    $(B)/obj/test/common/tc.o $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(B)/obj/test/common/tc.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_vulkan_model_texel
