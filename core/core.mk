# core/: the loader library libbackplane.so
CORE_SRCS := $(sort $(wildcard core/*.c))
CORE_OBJS := $(CORE_SRCS:%.c=$(B)/obj/%.o)
$(CORE_OBJS): CFLAGS_EXTRA := -fvisibility=hidden -DBP_BUILDING_LIBRARY \
  -DBP_PLUGIN_INSTALL_DIR=\"$(PLUGIN_INSTALL_DIR)\" -DBP_VERSION_STRING=\"$(VERSION)\"

$(B)/lib/libbackplane.so.$(VERSION): $(CORE_OBJS) core/libbackplane.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libbackplane.so.$(SOVERSION) \
	  -Wl,--version-script=core/libbackplane.map $(LDFLAGS_BASE) \
	  -o $@ $(CORE_OBJS) -ldl -lpthread -lm

$(LIB): $(B)/lib/libbackplane.so.$(VERSION)
	ln -sf libbackplane.so.$(VERSION) $(B)/lib/libbackplane.so.$(SOVERSION)
	ln -sf libbackplane.so.$(VERSION) $@

# bp-probe: the helper that probes plugins in a process of their own
# (core/isolate.c). It links the loader's objects, so it is this build's
# loader; it sits in backplane/ beside the library, where the library looks
# first, and is installed to $(PROBE_HELPER_DIR).
PROBE_HELPER_DIR ?= $(LIBDIR)/backplane
PROBE_HELPER := $(B)/lib/backplane/bp-probe
$(CORE_OBJS): CFLAGS_EXTRA += -DBP_PROBE_HELPER_PATH=\"$(PROBE_HELPER_DIR)/bp-probe\"
$(B)/obj/core/probe/probe_main.o: CFLAGS_EXTRA := -DBP_BUILDING_LIBRARY

$(PROBE_HELPER): $(B)/obj/core/probe/probe_main.o $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -ldl -lpthread -lm

# Whatever uses the library can isolate its plugins.
$(LIB): $(PROBE_HELPER)
