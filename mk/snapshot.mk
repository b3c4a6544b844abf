# snapshot.mk: the snapshot format's test tools, fixtures and fuzzer
# (man ptkit-snapshot.5).
#
# mksnap (tests/snap/) builds snapshots for the fixtures without a
# recorder: it single-steps the fixture under ptrace, encodes the path as
# Intel PT with libipt's encoder (tests/snap/ptenc.c) and writes the
# snapshot through lib/snapshot and lib/perfdata.  The fixtures are never
# built with SANITIZE flags: they are traced, and must stay free of the
# sanitizer runtime's system calls and code.

SNAP_DIR := $(BUILD)/tests/snap
SNAP_MKSNAP := $(SNAP_DIR)/mksnap
SNAP_TOOL_OBJS := $(SNAP_DIR)/mksnap.o $(SNAP_DIR)/ptenc.o
SNAP_FIXTURE_CFLAGS := -std=gnu17 -O1 -g -fno-inline -fno-omit-frame-pointer \
	-Wall -pthread
SNAP_FIXTURES := $(BUILD)/tests/fixtures/snap/snap_work \
	$(BUILD)/tests/fixtures/snap/snap_work.static \
	$(BUILD)/tests/fixtures/snap/snap_threads

$(SNAP_DIR)/%.o: tests/snap/%.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) -iquote tests/snap $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(SNAP_MKSNAP): $(SNAP_TOOL_OBJS) $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $(SNAP_TOOL_OBJS) $(LIBPTKIT) $(LIBS_ALL)

$(BUILD)/tests/fixtures/snap/%: tests/fixtures/snap/%.c
	@mkdir -p $(@D)
	$(CC) $(SNAP_FIXTURE_CFLAGS) -o $@ $<

$(BUILD)/tests/fixtures/snap/%.static: tests/fixtures/snap/%.c
	@mkdir -p $(@D)
	$(CC) $(SNAP_FIXTURE_CFLAGS) -static -o $@ $<

CHECK_DEPS += $(SNAP_MKSNAP) $(SNAP_FIXTURES)

# The perf.data reader's fuzzer (make fuzz, or make fuzz-perfdata).  The
# seed corpus in tests/fuzz/perfdata is read-only; new inputs go to the
# build directory.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
SNAP_FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -D_GNU_SOURCE -std=c17 -iquote lib
SNAP_FUZZ := $(BUILD)/fuzz/fuzz_perfdata

$(SNAP_FUZZ): tests/fuzz/fuzz_perfdata.c lib/fmt/perfdata.c lib/fmt/perfdata_write.c \
    lib/base/error.c lib/fmt/perfdata.h lib/fmt/perfdata_int.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(SNAP_FUZZ_FLAGS) -o $@ $(filter %.c,$^) -lzstd

fuzz-perfdata: $(SNAP_FUZZ)
	@mkdir -p $(BUILD)/fuzz/corpus-perfdata
	$< $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    $(BUILD)/fuzz/corpus-perfdata tests/fuzz/perfdata

FUZZ_RUNS += fuzz-perfdata
FUZZ_BINS += $(SNAP_FUZZ)
.PHONY: fuzz-perfdata

# The manifest's readers (manifest_read, and manifest_check_paths that
# import runs), seeded with manifests of mksnap and the emu recorder and
# one with members naming files outside.
SNAP_FUZZ_MANIFEST := $(BUILD)/fuzz/fuzz_manifest

$(SNAP_FUZZ_MANIFEST): tests/fuzz/fuzz_manifest.c lib/fmt/manifest.c     lib/base/json.c lib/base/jsonw.c lib/base/error.c lib/fmt/manifest.h     lib/base/json.h lib/base/jsonw.h lib/base/error.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(SNAP_FUZZ_FLAGS) $(PKG_CFLAGS) -o $@ $(filter %.c,$^) \
	    -ljansson -lm

fuzz-manifest: $(SNAP_FUZZ_MANIFEST)
	@mkdir -p $(BUILD)/fuzz/corpus-manifest
	$< $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -max_len=65536 $(BUILD)/fuzz/corpus-manifest \
	    tests/fuzz/manifest-seeds

FUZZ_RUNS += fuzz-manifest
FUZZ_BINS += $(SNAP_FUZZ_MANIFEST)
.PHONY: fuzz-manifest
