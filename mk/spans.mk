# spans.mk: ptspans's fuzzer, its e2e fixtures and its bench.

# Fixtures (tests/fixtures/spans): C and C++ built -O2 -g, each printing
# its own call counts.  -z now: no lazy binding, so a PLT call is one stub
# jump and never a resolver's tail call.  tree-stripped has its debuginfo
# in a separate file found through .gnu_debuglink.  Never SANITIZE-built:
# they are traced.
SPANS_FIX := $(BUILD)/tests/fixtures/spans
SPANS_FIX_CFLAGS := -O2 -g -Wl,-z,now -pthread
SPANS_FIXTURES := $(SPANS_FIX)/tree $(SPANS_FIX)/cxx $(SPANS_FIX)/cxxcold \
	$(SPANS_FIX)/names $(SPANS_FIX)/sig \
	$(SPANS_FIX)/threads $(SPANS_FIX)/dl $(SPANS_FIX)/libspansdl.so \
	$(SPANS_FIX)/strip/tree $(SPANS_FIX)/lto $(SPANS_FIX)/jit

$(SPANS_FIX)/lto: tests/fixtures/spans/lto.c tests/fixtures/spans/lto_helper.c
	@mkdir -p $(@D)
	$(CC) $(SPANS_FIX_CFLAGS) -flto -o $@ $^

$(SPANS_FIX)/%: tests/fixtures/spans/%.c
	@mkdir -p $(@D)
	$(CC) $(SPANS_FIX_CFLAGS) -o $@ $<

$(SPANS_FIX)/cxx: tests/fixtures/spans/cxx.cc
	@mkdir -p $(@D)
	$(CXX) $(SPANS_FIX_CFLAGS) -o $@ $<

$(SPANS_FIX)/cxxcold: tests/fixtures/spans/cxxcold.cc
	@mkdir -p $(@D)
	$(CXX) $(SPANS_FIX_CFLAGS) -o $@ $<

$(SPANS_FIX)/dl: tests/fixtures/spans/dl.c
	@mkdir -p $(@D)
	$(CC) $(SPANS_FIX_CFLAGS) -o $@ $< -ldl

$(SPANS_FIX)/libspansdl.so: tests/fixtures/spans/spansdl.c
	@mkdir -p $(@D)
	$(CC) $(SPANS_FIX_CFLAGS) -fPIC -shared -o $@ $<

$(SPANS_FIX)/strip/tree: $(SPANS_FIX)/tree
	@mkdir -p $(@D)
	objcopy --only-keep-debug $< $(@D)/tree.debug
	objcopy --strip-all --add-gnu-debuglink=$(@D)/tree.debug $< $@

CHECK_DEPS += $(SPANS_FIXTURES)

# The same debuginfo by build-id, for ptspans --debug-dir.
$(SPANS_FIX)/strip/debug/.done: $(SPANS_FIX)/strip/tree
	id=$$(readelf -n $< | sed -n 's/.*Build ID: *//p'); \
	    d=$(@D)/.build-id/$$(echo $$id | cut -c1-2); \
	    mkdir -p $$d && \
	    cp $(SPANS_FIX)/strip/tree.debug $$d/$$(echo $$id | cut -c3-).debug
	touch $@

CHECK_DEPS += $(SPANS_FIX)/strip/debug/.done

# The engine's fuzzer (see decode.mk for the flags): the reader, the
# engine and ptspans' writers over any bytes.  Seeds: block streams of
# real fixtures and of the unit tests' shapes.
SPANS_FUZZ := $(BUILD)/fuzz/fuzz_spans
$(SPANS_FUZZ): tests/fuzz/fuzz_spans.c lib/fmt/blkstream.c \
    lib/fmt/blkstream_read.c lib/fmt/blkstream_jsonl.c lib/span/callstack.c \
    lib/base/jsonw.c lib/base/error.c lib/base/fdio.c lib/span/spandir.c \
    lib/base/scratch.c lib/base/cleanup.c lib/base/signals.c \
    lib/fmt/zstdfile.c lib/base/xxh64.c lib/base/json.c cmd/ptspans/write.c \
    lib/span/callstack.h lib/span/spandir.h lib/fmt/blkstream.h \
    lib/fmt/blkstream_int.h cmd/ptspans/spans.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -iquote cmd/ptspans -o $@ $(filter %.c,$^) \
	    $(shell pkg-config --libs jansson 2>/dev/null) -lzstd

fuzz-spans: $(SPANS_FUZZ)
	@mkdir -p $(BUILD)/fuzz/corpus-spans
	$< $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=1024 \
	    $(BUILD)/fuzz/corpus-spans tests/fuzz/spans

FUZZ_RUNS += fuzz-spans
FUZZ_BINS += $(SPANS_FUZZ)
.PHONY: fuzz-spans

# The analysis readers' fuzzer: manifest.json, spans.jsonl and index.bin
# of an analysis directory cut from the input, opened (index.bin rebuilt
# when missing or stale) and read back as ptquery does.  Seeds: the
# files of a real analysis, whole and damaged, and an index.bin whose
# checksums the target makes right (so the row checks are reached).
ANALYSIS_FUZZ := $(BUILD)/fuzz/fuzz_analysis
ANALYSIS_FUZZ_SRCS := tests/fuzz/fuzz_analysis.c lib/span/analysis.c \
    lib/span/spandir.c lib/fmt/spanidx.c lib/fmt/store.c lib/fmt/manifest.c \
    lib/base/json.c lib/base/jsonw.c lib/base/error.c lib/base/cleanup.c \
    lib/base/signals.c lib/base/beneath.c lib/base/scratch.c lib/base/fdio.c \
    lib/base/xxh64.c lib/fmt/zstdfile.c lib/base/mkpath.c \
    lib/span/aggkeep.c lib/span/aggregate.c lib/sym/demangle.c
$(ANALYSIS_FUZZ): $(ANALYSIS_FUZZ_SRCS) lib/span/analysis.h \
    lib/span/spandir.h lib/fmt/spanidx.h lib/span/aggkeep.h \
    lib/span/aggregate.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $(ANALYSIS_FUZZ_SRCS) \
	    $(shell pkg-config --libs jansson 2>/dev/null) -lzstd -liberty -lm

fuzz-analysis: $(ANALYSIS_FUZZ)
	@mkdir -p $(BUILD)/fuzz/corpus-analysis
	$< $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -rss_limit_mb=1024 -max_len=65536 $(BUILD)/fuzz/corpus-analysis \
	    tests/fuzz/analysis-seeds

FUZZ_RUNS += fuzz-analysis
FUZZ_BINS += $(ANALYSIS_FUZZ)
.PHONY: fuzz-analysis

# JIT code: the recorders' archive (ELF images from dumped bytes) and the
# emu plugin's dumps, each tested on its own objects.
$(BUILD)/tests/unit/t_jit_archive.o: ALL_CPPFLAGS += -iquote cmd/ptrec
$(BUILD)/tests/unit/t_jit_archive: \
    $(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o \
    $(BUILD)/cmd/ptrec/jit_archive.o $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/cmd/ptrec/jit_archive.o \
	    $(LIBPTKIT) $(LIBS_ALL)

$(BUILD)/tests/unit/t_emu_jit: \
    $(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o \
    $(BUILD)/cmd/ptrec/emu/emu_jit.o $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/cmd/ptrec/emu/emu_jit.o \
	    $(LIBPTKIT) $(LIBS_ALL)
