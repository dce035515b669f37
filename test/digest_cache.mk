# test/digest_cache.mk: manifest digests kept across processes
# (core/digest_cache.c); the fixture plugin aborts in its constructor, so a
# tampered copy that was mapped would kill the test.
$(B)/obj/test/test_digest_cache.o: CFLAGS_EXTRA := -Itest
$(B)/test/test_digest_cache: $(B)/obj/test/test_digest_cache.o $(LIB) \
    $(B)/test/fixtures/backend-ctorabort.so $(MANIFEST_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lpthread
TESTS += $(B)/test/test_digest_cache
