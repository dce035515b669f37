# test/tools.mk: the bp command's command-line test.
#  test_bp_cli  runs $(B)/bin/bp devices / run / bench through popen
$(B)/test/test_bp_cli: test/test_bp_cli.c $(B)/bin/bp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -o $@ $< $(LDFLAGS_BASE) -lcmocka
TESTS += $(B)/test/test_bp_cli
#  test_run_sh  test/run.sh's own counting (pass / fail / skip 77 and the
#               reasons) and the device suites' skip-or-fail rule
TESTS += test/test_run_sh.sh
