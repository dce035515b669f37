# test/group.mk: device groups (core/group*.c). test_group runs split and
# whole ops on a group of "cpu" and a slow fixture device against "cpu-ref"
# (test/common), the measured shares, the same-hardware rule and refused
# member lists. The fixture backend-slow.so (test/fixtures/slow_plugin.c)
# lives in a folder of its own, so no other test loads it.
GROUP_TEST_COMMON := $(B)/obj/test/common/tc.o $(B)/obj/test/common/ref.o $(B)/obj/test/test_group_cache.o

$(B)/test/fixtures/group/backend-slow.so: test/fixtures/slow_plugin.c plugin-api.h backplane_types.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -shared -fvisibility=hidden -o $@ $< -lm

$(B)/obj/test/test_group.o: CFLAGS_EXTRA := -Itest/common

$(B)/test/test_group: $(B)/obj/test/test_group.o $(GROUP_TEST_COMMON) $(LIB) $(PLUGINS) \
  $(B)/test/fixtures/group/backend-slow.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(GROUP_TEST_COMMON) -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lm -lpthread
TESTS += $(B)/test/test_group
# Members run a split's slices on threads of their own.
TSAN_TESTS += $(B)/test/test_group
