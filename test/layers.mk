# test/layers.mk: layers (core/layers.c, core/layer_chain.c, plugins/layers)
# with test layers built from test/fixtures/test_layer.c and a plugin that
# computes wrong on purpose (test/fixtures/wrong_plugin.c) for the check
# layer.
LAYER_FIX := $(B)/test/layers
LAYER_FIX_DEF_orda := -DLAYER_DIGIT=1
LAYER_FIX_DEF_ordb := -DLAYER_DIGIT=2
LAYER_FIX_DEF_initfail := -DVARIANT_INIT_FAILS
LAYER_FIX_DEF_adds := -DVARIANT_ADDS_ENTRY
LAYER_FIX_DEF_abinew := -DVARIANT_ABI_NEW
LAYER_FIX_NAMES := orda ordb initfail adds abinew
LAYER_FIX_ALL := $(addprefix $(LAYER_FIX)/layer-,$(addsuffix .so,$(LAYER_FIX_NAMES))) $(LAYER_FIX)/backend-wrong.so

$(LAYER_FIX)/layer-%.so: test/fixtures/test_layer.c layer-api.h plugin-api.h test/layers.mk
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -shared -fvisibility=hidden -DLAYER_NAME='"$*"' $(LAYER_FIX_DEF_$*) $< -o $@

$(LAYER_FIX)/backend-wrong.so: test/fixtures/wrong_plugin.c plugin-api.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -shared -fvisibility=hidden $< -o $@ -lm

$(B)/obj/test/test_layers.o: CFLAGS_EXTRA := -Itest
$(B)/test/test_layers: $(B)/obj/test/test_layers.o $(LIB) $(LAYER_FIX_ALL) $(LAYERS) $(MANIFESTS) \
    $(B)/plugins/backend-cpu.so $(B)/test/broken/backend-good.so $(MANIFEST_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lpthread
TESTS += $(B)/test/test_layers

# bp trace -- COMMAND and bp run --stats.
TESTS += test/test_bp_layers.sh
