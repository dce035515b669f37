# plugins/comm-nccl: comm-nccl.so, collectives on CUDA memory through NCCL
# (comm-api.h, docs/scale-out.md). libnccl.so.2 and libcuda.so.1 are opened
# with dlopen at run time: no NCCL or CUDA headers at build time. CI runs it
# against test/shims/nccl (NCCL on the CPU) over the CUDA driver shim.
COMM_NCCL_SRCS := $(sort $(wildcard plugins/comm-nccl/*.c))
COMM_NCCL_OBJS := $(COMM_NCCL_SRCS:%.c=$(B)/obj/%.o)
$(COMM_NCCL_OBJS): CFLAGS_EXTRA = $(PLUGIN_CFLAGS)

$(B)/plugins/comm-nccl.so: $(COMM_NCCL_OBJS) plugins/comm-mpi/comm.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--version-script=plugins/comm-mpi/comm.map $(LDFLAGS_BASE) -o $@ \
	  $(COMM_NCCL_OBJS) -ldl -lpthread
COMM_PLUGINS += $(B)/plugins/comm-nccl.so
all: $(B)/plugins/comm-nccl.so

.PHONY: install-comm-nccl
install: install-comm-nccl
install-comm-nccl: $(B)/plugins/comm-nccl.so
	install -d $(DESTDIR)$(PLUGIN_INSTALL_DIR)
	install -m 755 $< $(DESTDIR)$(PLUGIN_INSTALL_DIR)/
