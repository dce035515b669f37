# plugins/rocm: backend-rocm.so, AMD GPUs through the HIP runtime.
# Builds with no ROCm SDK: libamdhip64.so and hiprtc are opened with dlopen
# at run time (plugins/rocm/hip_runtime.h declares what is used). The kernels
# are the HIP sources kernels/hip/*.hip (most of them the CUDA sources of
# kernels/cuda through kernels/hip/bp_hip_compat.h), embedded as strings by
# plugins/rocm/embed.sh into $(B)/gen/rocm/rocm_hip_src.h and compiled by
# hiprtc for the GPU at run time.
ROCM_KERNEL_NAMES := elementwise reduce norm gemm conv attention adam random
ROCM_KERNEL_DEPS := $(wildcard kernels/hip/*.hip kernels/hip/*.h \
  kernels/cuda/*.cu kernels/cuda/*.cuh kernels/cuda/*.h kernels/common/*.h)
ROCM_SRCS := $(sort $(wildcard plugins/rocm/*.c))
ROCM_OBJS := $(ROCM_SRCS:%.c=$(B)/obj/%.o)
ROCM_GEN := $(B)/gen/rocm/rocm_hip_src.h

$(ROCM_OBJS): CFLAGS_EXTRA = $(PLUGIN_CFLAGS) -I$(B)/gen/rocm
$(B)/obj/plugins/rocm/module.o: $(ROCM_GEN)

$(ROCM_GEN): $(ROCM_KERNEL_DEPS) plugins/rocm/embed.sh plugins/rocm/plugin.mk
	@mkdir -p $(dir $@)
	sh plugins/rocm/embed.sh $@ $(ROCM_KERNEL_NAMES)

$(B)/plugins/backend-rocm.so: $(ROCM_OBJS) plugins/plugin.map
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_LDFLAGS) $(LDFLAGS_BASE) -o $@ $(ROCM_OBJS) -ldl -lpthread
PLUGINS += $(B)/plugins/backend-rocm.so
