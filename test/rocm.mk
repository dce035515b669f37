# test/rocm.mk: the ROCm backend's tests, runnable without a GPU or ROCm.
#  $(B)/test/shims/hip/libamdhip64.so  CPU shim of the HIP runtime, and
#  $(B)/test/shims/hip/libhiprtc.so    of hiprtc (test only, never installed);
#                                      the kernels are the CUDA shim's C ones
#  test_rocm       host side of backend-rocm.so through the public API,
#                  against the shims: probe, memory, streams, events, every
#                  op's launch path, the code-object cache, errors
#  test_rocm_kernels  custom HIP kernels (BP_KERNEL_HIP) through the shims:
#                  hiprtc and the cache, argument marshalling, shared
#                  memory, errors
#  test_rocm_ops   the op suites (test_ops_*, test_parity) on the "rocm"
#                  device over the shims, against the reference
#  test_rocm_hiprtc  every embedded kernel source through a real hiprtc
#                  for several architectures (skipped without ROCm)
HIP_SHIM_DIR := $(B)/test/shims/hip
HIP_SHIM := $(HIP_SHIM_DIR)/libamdhip64.so
HIPRTC_SHIM := $(HIP_SHIM_DIR)/libhiprtc.so
HIP_SHIM_OBJS := $(addprefix $(B)/obj/test/shims/hip/,runtime.o module.o env.o graph.o)
HIPRTC_SHIM_OBJS := $(addprefix $(B)/obj/test/shims/hip/,hiprtc.o env.o) \
  $(B)/obj/test/shims/common/env.o
$(B)/obj/test/shims/hip/%.o: CFLAGS_EXTRA := -fvisibility=hidden

$(HIP_SHIM): $(HIP_SHIM_OBJS) $(B)/obj/test/shims/cuda/kernels.o \
    $(B)/obj/test/shims/cuda/custom.o $(B)/obj/test/shims/common/capture.o \
    $(B)/obj/test/shims/common/heap.o $(B)/obj/test/shims/common/streams.o \
    $(B)/obj/test/shims/common/env.o
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libamdhip64.so $(LDFLAGS_BASE) -o $@ $^ -lpthread -lm
$(HIPRTC_SHIM): $(HIPRTC_SHIM_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libhiprtc.so $(LDFLAGS_BASE) -o $@ $^
TEST_SUPPORT += $(HIP_SHIM) $(HIPRTC_SHIM)

$(B)/obj/test/test_rocm.o: CFLAGS_EXTRA := -Itest/common
$(B)/test/test_rocm: $(B)/obj/test/test_rocm.o $(LIB) $(HIP_SHIM) \
    $(HIPRTC_SHIM) $(B)/plugins/backend-rocm.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -ldl -lm -lpthread

$(B)/obj/test/test_rocm_kernels.o: CFLAGS_EXTRA := -Itest/common
$(B)/test/test_rocm_kernels: $(B)/obj/test/test_rocm_kernels.o $(LIB) \
    $(HIP_SHIM) $(HIPRTC_SHIM) $(B)/plugins/backend-rocm.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane \
	  -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -ldl -lm -lpthread

# Shell tests are copied next to the binaries they drive.
$(B)/test/test_rocm_ops: test/test_gpu_ops.sh $(HIP_SHIM) $(HIPRTC_SHIM) \
    $(B)/test/shims/rocblas/librocblas.so.4
	@mkdir -p $(dir $@)
	cp $< $@ && chmod +x $@
$(B)/test/test_rocm_hiprtc: test/test_rocm_hiprtc.sh $(B)/test/test_rocm_hiprtc_check
	@mkdir -p $(dir $@)
	cp $< $@ && chmod +x $@
$(B)/obj/test/test_rocm_hiprtc_check.o: CFLAGS_EXTRA := -I$(B)/gen/rocm
$(B)/obj/test/test_rocm_hiprtc_check.o: $(ROCM_GEN)
$(B)/test/test_rocm_hiprtc_check: $(B)/obj/test/test_rocm_hiprtc_check.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -ldl

TESTS += $(B)/test/test_rocm $(B)/test/test_rocm_kernels $(B)/test/test_rocm_ops $(B)/test/test_rocm_hiprtc
