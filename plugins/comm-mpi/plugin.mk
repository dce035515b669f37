# plugins/comm-mpi: comm-mpi.so, collectives through Open MPI (comm-api.h,
# docs/scale-out.md). libmpi.so.40 is opened with dlopen at run time: the
# plugin builds without MPI headers or libraries. Comm plugins are kept out
# of PLUGINS (the backends, whose manifests plugins/manifests.mk writes)
# and installed beside them by their own rule.
COMM_MPI_SRCS := $(sort $(wildcard plugins/comm-mpi/*.c))
COMM_MPI_OBJS := $(COMM_MPI_SRCS:%.c=$(B)/obj/%.o)
$(COMM_MPI_OBJS): CFLAGS_EXTRA = $(PLUGIN_CFLAGS)
# The ring's element-wise reductions (ring.c) run on the progress thread
# between transfers; -O3 vectorises their loops, which -O2 leaves scalar.
$(B)/obj/plugins/comm-mpi/reduce_local.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) -O3

$(B)/plugins/comm-mpi.so: $(COMM_MPI_OBJS) plugins/comm-mpi/comm.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--version-script=plugins/comm-mpi/comm.map $(LDFLAGS_BASE) -o $@ \
	  $(COMM_MPI_OBJS) -ldl -lpthread
COMM_PLUGINS += $(B)/plugins/comm-mpi.so
all: $(B)/plugins/comm-mpi.so

.PHONY: install-comm-mpi
install: install-comm-mpi
install-comm-mpi: $(B)/plugins/comm-mpi.so
	install -d $(DESTDIR)$(PLUGIN_INSTALL_DIR)
	install -m 755 $< $(DESTDIR)$(PLUGIN_INSTALL_DIR)/
