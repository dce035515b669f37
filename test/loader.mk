# test/loader.mk: the loader's tests, the broken-plugin corpus, the stress
# test and the fuzz harness.
#
#   $(B)/test/broken/backend-*.so   variants of test/broken/broken_plugin.c,
#                                   one fault each, plus non-ELF fixtures
#   make broken-corpus              $(B)/test/corpus/: one of each kind, for
#                                   BACKPLANE_PLUGIN_PATH=... bp devices
#   make fuzz FUZZ_TIME=600         the libFuzzer harness (clang), in build-fuzz/
#   make fuzz-regress               replays test/fuzz/regressions/
#
# The variants live outside $(B)/plugins so that the default search path
# never sees them; tests copy the ones they need into a temporary directory.

BROKEN_DIR := $(B)/test/broken
BROKEN_SRC := test/broken/broken_plugin.c
BROKEN_CFLAGS = $(CFLAGS_BASE) -shared -fvisibility=hidden

# name -> defines. Names are also the plugins' descriptor names.
BROKEN_DEF_nosym := -DVARIANT_NO_SYMBOL
BROKEN_DEF_tinysym := -DVARIANT_TINY_SYMBOL
BROKEN_DEF_magic := -DVARIANT_BAD_MAGIC
BROKEN_DEF_abinew := -DVARIANT_ABI_NEW
BROKEN_DEF_abiold := -DVARIANT_ABI_OLD
BROKEN_DEF_small := -DVARIANT_SIZE_SMALL
BROKEN_DEF_large := -DVARIANT_SIZE_LARGE
BROKEN_DEF_sizelie := -DVARIANT_SIZE_LIE
BROKEN_DEF_nullname := -DVARIANT_NULL_NAME
BROKEN_DEF_badname := -DVARIANT_BAD_NAME
BROKEN_DEF_nullversion := -DVARIANT_NULL_VERSION
BROKEN_DEF_nullfn := -DVARIANT_NULL_REQUIRED
BROKEN_DEF_initfail := -DVARIANT_INIT_FAILS
BROKEN_DEF_probeerr := -DVARIANT_PROBE_ERROR
BROKEN_DEF_probenone := -DVARIANT_PROBE_NONE
BROKEN_DEF_crash := -DVARIANT_PROBE_CRASH
BROKEN_DEF_hang := -DVARIANT_PROBE_HANG
BROKEN_DEF_ctorexit := -DVARIANT_CTOR_EXIT
BROKEN_DEF_ctorcrash := -DVARIANT_CTOR_CRASH
BROKEN_DEF_dup-a := -DVARIANT_DUPLICATE
BROKEN_DEF_dup-b := -DVARIANT_DUPLICATE
BROKEN_DEF_good :=
BROKEN_DEF_claimsfill := -DVARIANT_CLAIMS_FILL
BROKEN_DEF_thread := -DVARIANT_THREAD -pthread
BROKEN_DEF_flaky := -DVARIANT_FLAKY
BROKEN_DEF_counting := -DVARIANT_COUNT_PROBES
BROKEN_DEF_fake-dgpu := -DBROKEN_KIND=BP_DEVICE_DISCRETE_GPU -DBROKEN_SCORE=10
BROKEN_DEF_fake-dgpu-hi := -DBROKEN_KIND=BP_DEVICE_DISCRETE_GPU -DBROKEN_SCORE=20
BROKEN_DEF_fake-dgpu-mem := -DBROKEN_KIND=BP_DEVICE_DISCRETE_GPU \
  -DBROKEN_SCORE=10 -DBROKEN_MEMORY='(4ull<<30)'
BROKEN_DEF_fake-igpu := -DBROKEN_KIND=BP_DEVICE_INTEGRATED_GPU -DBROKEN_SCORE=100
BROKEN_DEF_fake-two := -DBROKEN_KIND=BP_DEVICE_OTHER -DBROKEN_DEVICES=2

BROKEN_NAMES := nosym tinysym magic abinew abiold small large sizelie \
  nullname badname nullversion nullfn initfail probeerr probenone crash hang \
  ctorexit ctorcrash dup-a dup-b good claimsfill thread flaky counting fake-dgpu fake-dgpu-hi \
  fake-dgpu-mem fake-igpu fake-two
# Files that are not loadable libraries, generated here.
BROKEN_FILES := text empty elf32 aarch64 needsdep
BROKEN_ALL := $(addprefix $(BROKEN_DIR)/backend-,$(addsuffix .so,$(BROKEN_NAMES) $(BROKEN_FILES)))

$(BROKEN_DIR)/backend-%.so: $(BROKEN_SRC) plugin-api.h test/loader.mk
	@mkdir -p $(dir $@)
	$(CC) $(BROKEN_CFLAGS) -DBROKEN_NAME='"$*"' $(BROKEN_DEF_$*) $< -o $@

# Links against libbpbrokendep.so, then deletes it: dlopen must name it.
$(BROKEN_DIR)/backend-needsdep.so: $(BROKEN_SRC) plugin-api.h test/loader.mk
	@mkdir -p $(BROKEN_DIR)/dep
	$(CC) $(BROKEN_CFLAGS) -DBROKEN_DEP_LIBRARY $< -o $(BROKEN_DIR)/dep/libbpbrokendep.so
	$(CC) $(BROKEN_CFLAGS) -DBROKEN_NAME='"needsdep"' -DVARIANT_NEEDS_DEP $< \
	  -o $@ -L$(BROKEN_DIR)/dep -lbpbrokendep
	rm -f $(BROKEN_DIR)/dep/libbpbrokendep.so

$(BROKEN_DIR)/backend-text.so:
	@mkdir -p $(dir $@)
	printf 'This is a text file named like a plugin.\n' > $@

$(BROKEN_DIR)/backend-empty.so:
	@mkdir -p $(dir $@)
	: > $@

# A working plugin whose ELF header says 32-bit (EI_CLASS, byte 4) or
# AArch64 (e_machine, bytes 18-19): what a wrong-architecture build looks
# like to the loader, without needing a cross compiler.
$(BROKEN_DIR)/backend-elf32.so: $(BROKEN_DIR)/backend-good.so
	cp $< $@
	printf '\001' | dd of=$@ bs=1 seek=4 conv=notrunc status=none

$(BROKEN_DIR)/backend-aarch64.so: $(BROKEN_DIR)/backend-good.so
	cp $< $@
	printf '\267\000' | dd of=$@ bs=1 seek=18 conv=notrunc status=none

TEST_SUPPORT += $(BROKEN_ALL)

# ---- the corpus a human can point bp at --------------------------------------
# One of each kind, including the ones only a run can create (directory,
# symlink loop, modes). The world-writable directory is a second directory,
# since every plugin inside it is refused.
CORPUS := $(B)/test/corpus
.PHONY: broken-corpus
broken-corpus: $(BROKEN_ALL)
	rm -rf $(CORPUS) $(CORPUS)-wwdir
	mkdir -p $(CORPUS) $(CORPUS)-wwdir
	for n in $(filter-out good fake-%,$(BROKEN_NAMES)) $(BROKEN_FILES); do \
	  cp $(BROKEN_DIR)/backend-$$n.so $(CORPUS)/; done
	mkdir $(CORPUS)/backend-dir.so
	ln -s backend-loop.so $(CORPUS)/backend-loop.so
	cp $(BROKEN_DIR)/backend-good.so $(CORPUS)/backend-worldwritable.so
	chmod 0666 $(CORPUS)/backend-worldwritable.so
	cp $(BROKEN_DIR)/backend-good.so $(CORPUS)-wwdir/backend-inwwdir.so
	chmod 0777 $(CORPUS)-wwdir
	@echo "corpus: BACKPLANE_PLUGIN_PATH=$(CORPUS):$(CORPUS)-wwdir:$(B)/plugins $(B)/bin/bp devices"

# ---- cmocka tests --------------------------------------------------------------
LOADER_TESTS := path refusal descriptor ranking isolate cycles trust
LOADER_TEST_BINS := $(addprefix $(B)/test/test_loader_,$(LOADER_TESTS))
TEST_LINK = -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lcmocka -lpthread -ldl

$(LOADER_TEST_BINS): $(B)/test/test_loader_%: $(B)/obj/test/test_loader_%.o $(LIB) $(B)/plugins/backend-cpu.so $(BROKEN_ALL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(TEST_LINK)

# test_loader_trust re-executes itself setgid, where glibc ignores $ORIGIN and
# LD_LIBRARY_PATH: it also carries the library directory's absolute path.
$(B)/test/test_loader_trust: TEST_LINK += -Wl,-rpath,$(abspath $(B))/lib

$(B)/test/test_stress: $(B)/obj/test/test_stress.o $(LIB) $(B)/plugins/backend-cpu.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(TEST_LINK) -lm

$(B)/obj/test/test_loader_%.o: CFLAGS_EXTRA := -Itest
$(B)/obj/test/test_stress.o: CFLAGS_EXTRA := -Itest

# Not a test: the start-up timer behind docs/performance.md (bench_startup.sh).
$(B)/test/bench_startup: $(B)/obj/test/bench_startup.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib'
TEST_SUPPORT += $(B)/test/bench_startup

TESTS += $(LOADER_TEST_BINS) $(B)/test/test_stress
TSAN_TESTS += $(B)/test/test_stress

# ---- fuzzing -------------------------------------------------------------------
# The harness links the loader's sources directly, built with clang and
# -fsanitize=fuzzer-no-link,address,undefined; the CPU plugin is built the same
# way into build-fuzz/plugins. FUZZ_TIME is in seconds.
FUZZ_TIME ?= 600
FUZZ_B := build-fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
.PHONY: fuzz fuzz-build
fuzz-build:
	$(MAKE) B=$(FUZZ_B) CC=clang OPT=-O1 SAN="$(FUZZ_SAN)" \
	  EXTRA_CFLAGS="-fsanitize=fuzzer-no-link -Wno-unknown-warning-option" $(FUZZ_B)/lib/libbackplane.so \
	  $(FUZZ_B)/plugins/backend-cpu.so $(FUZZ_B)/test/fuzz_api

$(B)/test/fuzz_api: test/fuzz/fuzz_api.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -fsanitize=fuzzer -o $@ $< $(LDFLAGS_BASE) \
	  -L$(B)/lib -lbackplane -Wl,-rpath,'$$ORIGIN/../lib' -lpthread -ldl

# intercept_tls_get_addr=0: LeakSanitizer's guess at a dlopen'ed library's
# thread-local block can land on unmapped memory and kill its final scan
# ("Tracer caught signal 11"), by chance of where malloc put the block; see
# check-asan in the Makefile (google/sanitizers#1322).
fuzz: fuzz-build
	mkdir -p $(FUZZ_B)/fuzz-corpus
	BACKPLANE_PLUGIN_PATH=$(FUZZ_B)/plugins ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 \
	  $(FUZZ_B)/test/fuzz_api -max_total_time=$(FUZZ_TIME) -timeout=20 \
	  -rss_limit_mb=4096 -max_len=4096 -print_final_stats=1 \
	  -artifact_prefix=$(FUZZ_B)/ $(FUZZ_B)/fuzz-corpus test/fuzz/corpus

# Inputs that once found a bug; each must now run clean.
.PHONY: fuzz-regress
fuzz-regress: fuzz-build
	$(FUZZ_B)/test/fuzz_api test/fuzz/regressions/*

.PHONY: fuzz-clean
fuzz-clean:
	rm -rf $(FUZZ_B)
clean: fuzz-clean
