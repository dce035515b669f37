# tools/: the bp command, built as $(B)/bin/bp from tools/bp/*.c (one file
# per subcommand, plus shared helpers), and the `make bench` recipe.
BP_TOOL_SRCS := $(sort $(wildcard tools/bp/*.c))
BP_TOOL_OBJS := $(BP_TOOL_SRCS:%.c=$(B)/obj/%.o)
$(BP_TOOL_OBJS): CFLAGS_EXTRA := -Itools/bp -include $(BP_CONFIG_H)
$(BP_TOOL_OBJS): $(BP_CONFIG_H)

$(B)/bin/bp: $(BP_TOOL_OBJS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(BP_TOOL_OBJS) -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lm -ldl -lpthread
TOOLS += $(B)/bin/bp

# Installs the anchors (OpenBLAS, PyTorch) when missing, builds, benchmarks.
bench:
	sh tools/deps.sh bench && $(MAKE) all && $(B)/bin/bp bench
