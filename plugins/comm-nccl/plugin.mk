# plugins/comm-nccl: comm-nccl.so (NCCL on CUDA memory) and comm-rccl.so
# (RCCL on ROCm memory), one source built twice (comm-api.h,
# docs/scale-out.md): RCCL keeps NCCL's API, and gpu.h puts the CUDA
# driver (gpu_cuda.c) or the HIP runtime (gpu_hip.c, -DBP_COMM_RCCL)
# behind the few calls that differ. Every library is opened with dlopen at
# run time: no NCCL, RCCL, CUDA or HIP headers at build time. CI runs both
# against test/shims/nccl (NCCL on the CPU) over the CUDA and HIP shims.
COMM_NCCL_SRCS := $(sort $(wildcard plugins/comm-nccl/*.c))
COMM_NCCL_OBJS := $(COMM_NCCL_SRCS:%.c=$(B)/obj/%.o)
COMM_RCCL_OBJS := $(COMM_NCCL_SRCS:plugins/comm-nccl/%.c=$(B)/obj/plugins/comm-nccl/rccl/%.o)
$(COMM_NCCL_OBJS): CFLAGS_EXTRA = $(PLUGIN_CFLAGS)
$(COMM_RCCL_OBJS): CFLAGS_EXTRA = $(PLUGIN_CFLAGS) -DBP_COMM_RCCL -Iplugins/comm-nccl

$(B)/obj/plugins/comm-nccl/rccl/%.o: plugins/comm-nccl/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS_EXTRA) -MMD -MP -MT '$$(B)/$(patsubst $(B)/%,%,$@)' -c $< -o $@

$(B)/plugins/comm-nccl.so: $(COMM_NCCL_OBJS) plugins/comm-mpi/comm.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--version-script=plugins/comm-mpi/comm.map $(LDFLAGS_BASE) -o $@ \
	  $(COMM_NCCL_OBJS) -ldl -lpthread
$(B)/plugins/comm-rccl.so: $(COMM_RCCL_OBJS) plugins/comm-mpi/comm.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--version-script=plugins/comm-mpi/comm.map $(LDFLAGS_BASE) -o $@ \
	  $(COMM_RCCL_OBJS) -ldl -lpthread
COMM_PLUGINS += $(B)/plugins/comm-nccl.so $(B)/plugins/comm-rccl.so
all: $(B)/plugins/comm-nccl.so $(B)/plugins/comm-rccl.so

.PHONY: install-comm-nccl
install: install-comm-nccl
install-comm-nccl: $(B)/plugins/comm-nccl.so $(B)/plugins/comm-rccl.so
	install -d $(DESTDIR)$(PLUGIN_INSTALL_DIR)
	install -m 755 $^ $(DESTDIR)$(PLUGIN_INSTALL_DIR)/
