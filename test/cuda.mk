# test/cuda.mk: the CUDA backend's tests, runnable without a GPU.
#  $(B)/test/shims/cuda/libcuda.so.1  the CPU shim of the driver API (test
#                                     only, never installed)
#  test_cuda       host side of backend-cuda.so through the public API,
#                  against the shim: probe, memory, streams, events, errors
#  test_cuda_ops   the op suites (test_ops_*, test_parity) on the "cuda"
#                  device over the shim, against the reference
#  test_cuda_ptx   ptxas on every committed PTX for sm_80 and sm_90, and the
#                  committed PTX regenerated from kernels/cuda/*.cu (both
#                  skipped, with a message, without the toolkit)
CUDA_SHIM := $(B)/test/shims/cuda/libcuda.so.1
CUDA_SHIM_SRCS := test/shims/cuda/driver.c test/shims/cuda/module.c \
  test/shims/cuda/kernels.c test/shims/cuda/custom.c test/shims/cuda/graph.c \
  test/shims/common/capture.c test/shims/common/heap.c \
  test/shims/common/streams.c test/shims/common/env.c
CUDA_SHIM_OBJS := $(CUDA_SHIM_SRCS:%.c=$(B)/obj/%.o)
$(CUDA_SHIM_OBJS): CFLAGS_EXTRA := -fvisibility=hidden
# The random stream must not fuse multiply-adds (kernels/common/bp_philox.h).
$(B)/obj/test/shims/cuda/kernels.o: CFLAGS_EXTRA := -fvisibility=hidden \
  -ffp-contract=off

$(CUDA_SHIM): $(CUDA_SHIM_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libcuda.so.1 $(LDFLAGS_BASE) -o $@ \
	  $(CUDA_SHIM_OBJS) -lpthread -lm
TEST_SUPPORT += $(CUDA_SHIM)

$(B)/obj/test/test_cuda.o: CFLAGS_EXTRA := -Itest/common -I$(B)/gen/test
$(B)/test/test_cuda: $(B)/obj/test/test_cuda.o $(LIB) $(CUDA_SHIM) \
    $(B)/plugins/backend-cuda.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -ldl -lm -lpthread

# Shell tests are copied next to the binaries they drive.
$(B)/test/test_cuda_ops: test/test_gpu_ops.sh $(CUDA_SHIM) \
    $(B)/test/shims/cublas/libcublas.so.13
	@mkdir -p $(dir $@)
	cp $< $@ && chmod +x $@
$(B)/test/test_cuda_ptx: test/test_cuda_ptx.sh $(CUDA_PTX)
	@mkdir -p $(dir $@)
	cp $< $@ && chmod +x $@

TESTS += $(B)/test/test_cuda $(B)/test/test_cuda_ops $(B)/test/test_cuda_ptx

# The custom-kernel fixture's PTX, as one C string for test_cuda.
$(B)/gen/test/cuda_custom_ptx.inc: test/fixtures/cuda_custom.ptx
	@mkdir -p $(dir $@)
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@
$(B)/obj/test/test_cuda.o: $(B)/gen/test/cuda_custom_ptx.inc
