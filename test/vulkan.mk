# test/vulkan.mk: the Vulkan backend's tests.
#  test_vulkan   every claimed op through the public API vs cpu-ref, custom
#                kernels and native graphs (skips when there is no Vulkan
#                device)
# The SPIR-V custom-kernel fixture is compiled by glslc (as the plugin's
# kernels are); without glslc that part of the test is left out.
VK_TEST_OBJS := $(B)/obj/test/test_vulkan.o $(B)/obj/test/test_vulkan_ops.o \
  $(B)/obj/test/test_vulkan_kernels.o $(B)/obj/test/test_vulkan_graph.o
$(VK_TEST_OBJS): CFLAGS_EXTRA := -Itest/common
ifneq ($(GLSLC),)
$(B)/gen/test/saxpy_spv.inc: test/fixtures/saxpy.comp
	@mkdir -p $(dir $@)
	$(GLSLC) --target-env=vulkan1.2 -O -Werror -mfmt=num -o $@ $<
$(B)/obj/test/test_vulkan_kernels.o: $(B)/gen/test/saxpy_spv.inc
$(B)/obj/test/test_vulkan_kernels.o: CFLAGS_EXTRA := -Itest/common \
  -I$(B)/gen/test -DVT_HAVE_SAXPY_SPV
endif
$(B)/test/test_vulkan: $(VK_TEST_OBJS) $(B)/obj/test/common/tc.o \
    $(B)/obj/test/common/ref.o $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(VK_TEST_OBJS) $(B)/obj/test/common/tc.o \
	  $(B)/obj/test/common/ref.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_vulkan
