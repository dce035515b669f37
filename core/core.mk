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
