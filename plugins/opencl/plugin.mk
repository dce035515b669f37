# plugins/opencl: backend-opencl.so. OpenCL is reached through dlopen of
# libOpenCL.so.1, so only the Khronos headers (opencl-headers) are needed to
# build. Kernels under kernels/opencl/*.cl are embedded as a generated header.
OCL_SRCS := $(sort $(wildcard plugins/opencl/*.c))
OCL_OBJS := $(OCL_SRCS:%.c=$(B)/obj/%.o)
OCL_CL := $(sort $(wildcard kernels/opencl/*.cl))
OCL_GEN := $(B)/gen/opencl/ocl_sources.h
$(OCL_OBJS): CFLAGS_EXTRA = $(PLUGIN_CFLAGS) -I$(B)/gen/opencl
$(B)/obj/plugins/opencl/kernels_program.o: $(OCL_GEN)

$(OCL_GEN): $(OCL_CL) plugins/opencl/embed.sh
	@mkdir -p $(dir $@)
	sh plugins/opencl/embed.sh $(OCL_CL) > $@.tmp && mv $@.tmp $@

$(B)/plugins/backend-opencl.so: $(OCL_OBJS) plugins/plugin.map
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_LDFLAGS) $(LDFLAGS_BASE) -o $@ $(OCL_OBJS) -ldl -lpthread -lm
PLUGINS += $(B)/plugins/backend-opencl.so
