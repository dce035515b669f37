# test/comm.mk: communicators and comm plugins (docs/scale-out.md).
#   test_comm_api        one process: comm plugin discovery and refusals
#                        (fixtures built from test/fixtures/comm_fixture.c,
#                        one fault each), selection, the API's validation, a
#                        one-rank communicator, a timeout breaking it
#   test_comm_mpi.sh     $(B)/test/comm_rank under mpirun -np 4 on loopback:
#                        the grid, the staging path, mismatched calls, a
#                        killed rank, the data-parallel example, comm-bench
#   test_comm_nccl.sh    comm-nccl.so on the "cuda" device and comm-rccl.so
#                        on the "rocm" device, over the CUDA and HIP shims
#                        and the NCCL shim, 2 ranks each
#   test_comm_netns.sh   3 ranks on 3 "hosts" (network namespaces joined by
#                        veth pairs and a bridge, launched through
#                        test/comm_netns_agent.sh): the grid, a cut link
COMM_LINK = -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib'

$(B)/test/comm_rank: $(B)/obj/test/comm_rank.o $(LIB) $(B)/plugins/comm-mpi.so $(B)/plugins/backend-cpu.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(COMM_LINK)
$(B)/obj/test/comm_rank.o: CFLAGS_EXTRA := -Itest
TEST_SUPPORT += $(B)/test/comm_rank

# Comm plugin variants, one fault each, outside $(B)/plugins.
COMM_FIXTURES := good badmagic abinew nullfn unavailable crash
COMM_FIXTURE_DEF_good :=
COMM_FIXTURE_DEF_badmagic := -DCOMM_BAD_MAGIC
COMM_FIXTURE_DEF_abinew := -DCOMM_ABI_NEW
COMM_FIXTURE_DEF_nullfn := -DCOMM_NULL_ENTRY
COMM_FIXTURE_DEF_unavailable := -DCOMM_UNAVAILABLE
COMM_FIXTURE_DEF_crash := -DCOMM_PROBE_CRASH
COMM_FIXTURE_SOS := $(COMM_FIXTURES:%=$(B)/test/comm-fixtures/comm-%.so)
$(B)/test/comm-fixtures/comm-%.so: test/fixtures/comm_fixture.c comm-api.h test/comm.mk
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -shared -fvisibility=hidden -DFIXTURE_NAME='"$*"' $(COMM_FIXTURE_DEF_$*) $< -o $@
TEST_SUPPORT += $(COMM_FIXTURE_SOS)

$(B)/test/test_comm_api: $(B)/obj/test/test_comm_api.o $(LIB) $(B)/plugins/backend-cpu.so $(COMM_FIXTURE_SOS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(COMM_LINK) -lcmocka -lpthread
$(B)/obj/test/test_comm_api.o: CFLAGS_EXTRA := -Itest

# The test-only NCCL on the CPU (test/shims/nccl), for comm-nccl.so over
# the CUDA driver shim.
NCCL_SHIM := $(B)/test/shims/nccl/libnccl.so.2
$(B)/obj/test/shims/nccl/nccl.o: CFLAGS_EXTRA := -fvisibility=hidden
$(NCCL_SHIM): $(B)/obj/test/shims/nccl/nccl.o
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libnccl.so.2 $(LDFLAGS_BASE) -o $@ $< -lm
# RCCL keeps NCCL's API: the same shim under RCCL's name.
RCCL_SHIM := $(B)/test/shims/nccl/librccl.so.1
$(RCCL_SHIM): $(B)/obj/test/shims/nccl/nccl.o
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,librccl.so.1 $(LDFLAGS_BASE) -o $@ $< -lm
TEST_SUPPORT += $(NCCL_SHIM) $(RCCL_SHIM)

TESTS += $(B)/test/test_comm_api test/test_comm_mpi.sh test/test_comm_netns.sh test/test_comm_nccl.sh
# The progress threads and queues of asynchronous collectives (comm_queue.c).
TSAN_TESTS += $(B)/test/test_comm_api
