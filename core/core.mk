# core/: the loader library libbackplane.so
CORE_SRCS := $(sort $(wildcard core/*.c))
CORE_OBJS := $(CORE_SRCS:%.c=$(B)/obj/%.o)
BP_CONFIG_H := $(B)/gen/config.h
$(CORE_OBJS): CFLAGS_EXTRA := -fvisibility=hidden -DBP_BUILDING_LIBRARY \
  -include $(BP_CONFIG_H) -DBP_VERSION_STRING=\"$(VERSION)\"

# The directories configured at build time (PREFIX, LIBDIR, ...), written to
# $(B)/gen/config.h on every run but replaced only when they changed, so a
# `make install PREFIX=/b` after a build for /a rebuilds what uses them.
$(BP_CONFIG_H): bp-config-force
	@mkdir -p $(dir $@)
	@printf '#define BP_PLUGIN_INSTALL_DIR "%s"\n#define BP_PROBE_HELPER_PATH "%s"\n' \
	  '$(PLUGIN_INSTALL_DIR)' '$(PROBE_HELPER_DIR)/bp-probe' > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi
.PHONY: bp-config-force
bp-config-force:
$(CORE_OBJS): $(BP_CONFIG_H)

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
$(B)/obj/core/probe/probe_main.o: CFLAGS_EXTRA := -DBP_BUILDING_LIBRARY

$(PROBE_HELPER): $(B)/obj/core/probe/probe_main.o $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -ldl -lpthread -lm

# Whatever uses the library can isolate its plugins.
$(LIB): $(PROBE_HELPER)
