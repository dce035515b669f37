# test/tools.mk: the bp command's command-line test.
#  test_bp_cli  runs $(B)/bin/bp devices / run / bench / conformance through
#               popen; conformance on the broken-plugin corpus (loader.mk),
#               and with libcf_sabotage.so preloaded to break chosen calls
# The sabotage library is preloaded into bp, so it is built without the
# sanitizers (the test lets ASan accept the preload).
$(B)/test/fixtures/libcf_sabotage.so: test/fixtures/cf_sabotage.c core/backplane.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Werror -fPIC -shared -I. -Icore -o $@ $< -ldl

$(B)/test/test_bp_cli: test/test_bp_cli.c $(B)/bin/bp $(B)/test/fixtures/libcf_sabotage.so \
    $(BROKEN_ALL) $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -o $@ $< $(LDFLAGS_BASE) -lcmocka
TESTS += $(B)/test/test_bp_cli

#  test_run_sh  test/run.sh's own counting (pass / fail / skip 77 and the
#               reasons) and the device suites' skip-or-fail rule
TESTS += test/test_run_sh.sh
