# test/vulkan.mk: the Vulkan backend's tests.
#  test_vulkan   every claimed op through the public API vs cpu-ref (skips
#                when there is no Vulkan device)
VK_TEST_OBJS := $(B)/obj/test/test_vulkan.o $(B)/obj/test/test_vulkan_ops.o
$(VK_TEST_OBJS): CFLAGS_EXTRA := -Itest/common
$(B)/test/test_vulkan: $(VK_TEST_OBJS) $(B)/obj/test/common/tc.o \
    $(B)/obj/test/common/ref.o $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(VK_TEST_OBJS) $(B)/obj/test/common/tc.o \
	  $(B)/obj/test/common/ref.o -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_vulkan
