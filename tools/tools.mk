# tools/: the bp command, built as $(B)/bin/bp from tools/bp/*.c (one file
# per subcommand, plus shared helpers), and the `make bench` recipe.
BP_TOOL_SRCS := $(sort $(wildcard tools/bp/*.c))
# The model `bp bench --op model` runs (tools/model, shared with test/model.mk).
BP_TOOL_SRCS += tools/model/model.c tools/model/model_forward.c
BP_TOOL_OBJS := $(BP_TOOL_SRCS:%.c=$(B)/obj/%.o)
# bp reads and writes JSON with json-c (Debian libjson-c-dev, tools/deps.sh);
# only bp links it: the loader's dependencies stay libc, libdl, libpthread, libm.
JSONC_CFLAGS := $(shell pkg-config --cflags json-c 2>/dev/null)
JSONC_LIBS := $(shell pkg-config --libs json-c 2>/dev/null || echo -ljson-c)
$(BP_TOOL_OBJS): CFLAGS_EXTRA := -Itools/bp -include $(BP_CONFIG_H) $(JSONC_CFLAGS)
$(BP_TOOL_OBJS): $(BP_CONFIG_H)

$(B)/bin/bp: $(BP_TOOL_OBJS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(BP_TOOL_OBJS) -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' $(JSONC_LIBS) -lm -ldl -lpthread
TOOLS += $(B)/bin/bp

# Installs the anchors (OpenBLAS, PyTorch) when missing, builds, benchmarks.
bench:
	sh tools/deps.sh bench && $(MAKE) all && $(B)/bin/bp bench
