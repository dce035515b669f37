# plugins/layers: the layers shipped with backplane (layer-api.h), each a
# $(B)/plugins/layer-<name>.so beside the backends (same search path) built
# from its folder plus common/; manifests by plugins/manifests.mk.
LAYER_NAMES := passthrough stats trace check
LAYER_COMMON_OBJS := $(B)/obj/plugins/layers/common/layer_common.o
$(LAYER_COMMON_OBJS): CFLAGS_EXTRA = $(PLUGIN_CFLAGS)
define LAYER_RULES
LAYER_$(1)_OBJS := $$(patsubst %.c,$$(B)/obj/%.o,$$(sort $$(wildcard plugins/layers/$(1)/*.c)))
$$(LAYER_$(1)_OBJS): CFLAGS_EXTRA = $$(PLUGIN_CFLAGS)
$$(B)/plugins/layer-$(1).so: $$(LAYER_$(1)_OBJS) $$(LAYER_COMMON_OBJS) plugins/layers/layer.map
	@mkdir -p $$(dir $$@)
	$$(CC) -shared -Wl,--version-script=plugins/layers/layer.map $$(LDFLAGS_BASE) -o $$@ \
	  $$(LAYER_$(1)_OBJS) $$(LAYER_COMMON_OBJS) $$(LAYER_LIBS_$(1)) -lpthread -lm
LAYERS += $$(B)/plugins/layer-$(1).so
endef
# check re-runs sampled ops on the CPU plugin's reference device, which it
# opens itself with dlopen.
LAYER_LIBS_check := -ldl
$(foreach l,$(LAYER_NAMES),$(eval $(call LAYER_RULES,$(l))))
all: $(LAYERS)
