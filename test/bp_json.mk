# test/bp_json.mk: bp's JSON through json-c.
#  test_bp_json  the writer and reader of tools/bp/json_doc.c (escaping,
#                UTF-8 repair, NaN as null, layout), and `bp devices --json`
#                and `bp bench --json` with backend-oddnames.so, a working
#                test plugin whose device strings need escaping, alone in
#                $(B)/test/jsonodd (BACKPLANE_PLUGIN_PATH)
BP_JSON_ODD := $(B)/test/jsonodd/backend-oddnames.so
$(BP_JSON_ODD): test/broken/broken_plugin.c plugin-api.h test/bp_json.mk
	@mkdir -p $(dir $@)
	$(CC) $(BROKEN_CFLAGS) -DBROKEN_NAME='"oddnames"' -DVARIANT_ODD_STRINGS $< -o $@

$(B)/obj/test/test_bp_json.o: CFLAGS_EXTRA = -Itools/bp $(JSONC_CFLAGS)
$(B)/test/test_bp_json: $(B)/obj/test/test_bp_json.o $(B)/obj/tools/bp/json_doc.o \
    $(BP_JSON_ODD) $(B)/bin/bp $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $(B)/obj/test/test_bp_json.o $(B)/obj/tools/bp/json_doc.o \
	  -lcmocka $(JSONC_LIBS) -lm
TESTS += $(B)/test/test_bp_json
