# test/comm.mk: communicators and comm plugins (docs/scale-out.md).
#   test_comm_mpi.sh     $(B)/test/comm_rank under mpirun -np 4 on loopback:
#                        the grid, the staging path, mismatched calls, a
#                        killed rank
COMM_LINK = -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib'

$(B)/test/comm_rank: $(B)/obj/test/comm_rank.o $(LIB) $(B)/plugins/comm-mpi.so $(B)/plugins/backend-cpu.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(COMM_LINK)
$(B)/obj/test/comm_rank.o: CFLAGS_EXTRA := -Itest
TEST_SUPPORT += $(B)/test/comm_rank

TESTS += test/test_comm_mpi.sh
