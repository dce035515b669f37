# plugins/cpu: backend-cpu.so, the always-present CPU backend and reference.
# The glue at the top, the scalar reference in ref/, the fast kernels in
# fast/ and its op-family folders (docs/backend-cpu.md has the layout).
CPU_SRCS := $(sort $(wildcard plugins/cpu/*.c plugins/cpu/ref/*.c \
  plugins/cpu/fast/*.c plugins/cpu/fast/*/*.c))
CPU_OBJS := $(CPU_SRCS:%.c=$(B)/obj/%.o)
$(CPU_OBJS): CFLAGS_EXTRA = $(PLUGIN_CFLAGS)
# Per-file ISA flags for the fast kernels (files chosen at run time by CPUID).
-include plugins/cpu/fast.mk

$(B)/plugins/backend-cpu.so: $(CPU_OBJS) plugins/plugin.map
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_LDFLAGS) $(LDFLAGS_BASE) -o $@ $(CPU_OBJS) -lffi -ldl -lpthread -lm
PLUGINS += $(B)/plugins/backend-cpu.so
# The random stream must not fuse multiply-adds (kernels/common/bp_philox.h).
$(B)/obj/plugins/cpu/ref/ref_data.o: CFLAGS_EXTRA += -ffp-contract=off
