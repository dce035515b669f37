# test/hwloc.mk: the CPU device's topology. plugins/cpu/topology.c is linked
# into the test as well, to compare its discovery with the plugin's report,
# and threadpool.c, whose workers it pins.
$(B)/test/test_hwloc: $(B)/obj/test/test_hwloc.o $(B)/obj/plugins/cpu/topology.o \
  $(B)/obj/plugins/cpu/threadpool.o $(B)/obj/plugins/cpu/cpu_features.o $(LIB) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(B)/obj/test/test_hwloc.o $(B)/obj/plugins/cpu/topology.o \
	  $(B)/obj/plugins/cpu/threadpool.o $(B)/obj/plugins/cpu/cpu_features.o \
	  -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lpthread -ldl
TESTS += $(B)/test/test_hwloc

# PCI device locality (core/locality.c), against sysfs.
$(B)/test/test_locality: $(B)/obj/test/test_locality.o $(B)/obj/core/locality.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -lcmocka -lpthread -ldl
TESTS += $(B)/test/test_locality
