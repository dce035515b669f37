# plugins/rocm: backend-rocm.so, AMD GPUs through the HIP runtime.
# Built from the shared sources plugins/gpu/*.c (compiled here with
# -DBP_GPU_HIP, which selects plugins/gpu/vendors/hip.h) and what is ROCm's
# own in plugins/rocm/*.c.
# Builds with no ROCm SDK: libamdhip64.so and hiprtc are opened with dlopen
# at run time (plugins/rocm/hip_runtime.h declares what is used). The kernels
# are the HIP sources kernels/hip/*.hip (most of them the CUDA sources of
# kernels/cuda through kernels/hip/bp_hip_compat.h), embedded as strings by
# plugins/rocm/embed.sh into $(B)/gen/rocm/rocm_hip_src.h and compiled by
# hiprtc for the GPU at run time.
ROCM_KERNEL_NAMES := elementwise reduce norm gemm conv attention adam random model quant
ROCM_KERNEL_DEPS := $(wildcard kernels/hip/*.hip kernels/hip/*.h \
  kernels/cuda/*.cu kernels/cuda/*.cuh kernels/cuda/*.h kernels/common/*.h)
ROCM_SRCS := $(sort $(wildcard plugins/rocm/*.c))
ROCM_SHARED_OBJS := $(sort $(wildcard plugins/gpu/*.c))
ROCM_SHARED_OBJS := $(ROCM_SHARED_OBJS:plugins/gpu/%.c=$(B)/obj/plugins/gpu/rocm/%.o)
ROCM_OBJS := $(ROCM_SRCS:%.c=$(B)/obj/%.o) $(ROCM_SHARED_OBJS)
ROCM_GEN := $(B)/gen/rocm/rocm_hip_src.h

$(ROCM_OBJS): CFLAGS_EXTRA = $(PLUGIN_CFLAGS) -DBP_GPU_HIP -I$(B)/gen/rocm
$(B)/obj/plugins/rocm/kernels.o: $(ROCM_GEN)

# The shared sources, once per vendor: $(B)/obj/plugins/gpu/rocm/NAME.o.
$(B)/obj/plugins/gpu/rocm/%.o: plugins/gpu/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS_EXTRA) -MMD -MP -MT '$$(B)/$(patsubst $(B)/%,%,$@)' -c $< -o $@

$(ROCM_GEN): $(ROCM_KERNEL_DEPS) plugins/rocm/embed.sh plugins/rocm/plugin.mk
	@mkdir -p $(dir $@)
	sh plugins/rocm/embed.sh $@ $(ROCM_KERNEL_NAMES)

$(B)/plugins/backend-rocm.so: $(ROCM_OBJS) plugins/plugin.map
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_LDFLAGS) $(LDFLAGS_BASE) -o $@ $(ROCM_OBJS) -ldl -lpthread -lm
PLUGINS += $(B)/plugins/backend-rocm.so
