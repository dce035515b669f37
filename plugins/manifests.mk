# plugins/manifests.mk: a manifest beside every plugin and layer the build
# makes ($(B)/plugins/backend-<name>.json, layer-<name>.json), written by
# bp-manifest from the library's own descriptor and content hash, so the
# tests and `bp devices --no-load` see them in the build tree; make install
# copies them beside the installed libraries. Included by the Makefile after
# every plugins/*/plugin.mk, when PLUGINS and LAYERS are complete. Format and
# rules: docs/plugin-abi.md section 15.
MANIFEST_GEN := $(B)/bin/bp-manifest
$(B)/obj/tools/manifest/%.o: CFLAGS_EXTRA := -Icore
$(MANIFEST_GEN): $(B)/obj/tools/manifest/manifest_gen.o $(B)/obj/tools/manifest/sha256.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $^ -ldl
# The loader's SHA-256, compiled again for the build tool (no -include of
# the library's config).
$(B)/obj/tools/manifest/sha256.o: core/sha256.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -Icore -MMD -MP -c $< -o $@

# What each backend reports and loads at run time: ops teams read these
# without running the plugin.
MANIFEST_KINDS_cpu := cpu
MANIFEST_DLOPENS_cpu := libhwloc.so.15
MANIFEST_KINDS_vulkan := discrete-gpu,integrated-gpu,cpu,software,other
MANIFEST_DLOPENS_vulkan := libvulkan.so.1,libshaderc.so.1
MANIFEST_KINDS_opencl := discrete-gpu,integrated-gpu,cpu,software,other
MANIFEST_DLOPENS_opencl := libOpenCL.so.1
MANIFEST_KINDS_cuda := discrete-gpu,integrated-gpu
MANIFEST_DLOPENS_cuda := libcuda.so.1,libcublas.so.13,libcublas.so.12,libcublas.so.11
MANIFEST_KINDS_rocm := discrete-gpu,integrated-gpu
MANIFEST_DLOPENS_rocm := libamdhip64.so.6,libamdhip64.so.5,libamdhip64.so,libhiprtc.so.6,libhiprtc.so.5,libhiprtc.so,librocblas.so.4,librocblas.so.3,librocblas.so.0

# Backends and layers only: other kinds of plugin (comm-*.so) have
# descriptors of their own.
MANIFESTS := $(patsubst %.so,%.json,$(filter $(B)/plugins/backend-%.so,$(PLUGINS)) $(LAYERS))
manifest_name = $(patsubst layer-%,%,$(patsubst backend-%,%,$(basename $(notdir $(1)))))
$(MANIFESTS): $(B)/plugins/%.json: $(B)/plugins/%.so $(MANIFEST_GEN)
	$(MANIFEST_GEN) --kinds '$(MANIFEST_KINDS_$(call manifest_name,$@))' \
	  --dlopens '$(MANIFEST_DLOPENS_$(call manifest_name,$@))' $< $@
all: $(MANIFESTS)
