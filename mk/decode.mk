# ptdecode's area: the fuzzers of the block stream reader and
# of the decode core, Zydis for lib/x86class, and the bench helper.
# Fuzzers build with clang's libFuzzer over the lib sources they exercise,
# not over the layer archives (which has no coverage).

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -D_GNU_SOURCE -std=c17 -iquote lib
DEC_FUZZ_DIR := $(BUILD)/fuzz

$(DEC_FUZZ_DIR)/fuzz_blkstream: tests/fuzz/fuzz_blkstream.c lib/fmt/blkstream.c \
    lib/fmt/blkstream_read.c lib/fmt/blkstream_jsonl.c \
    lib/base/jsonw.c lib/base/error.c lib/base/fdio.c lib/fmt/blkstream.h \
    lib/fmt/blkstream_int.h lib/base/fdio.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $(filter %.c,$^)

# The seed corpus is read-only input; new finds go to the build dir.
fuzz-blkstream: $(DEC_FUZZ_DIR)/fuzz_blkstream
	@mkdir -p $(DEC_FUZZ_DIR)/corpus-blkstream
	$< $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=1024 \
	    $(DEC_FUZZ_DIR)/corpus-blkstream tests/fuzz/blkstream

$(DEC_FUZZ_DIR)/fuzz_ptdec: tests/fuzz/fuzz_ptdec.c lib/dec/ptdec.c \
    lib/dec/ptdec_ipt.c lib/dec/bbcache.c lib/dec/x86class.c lib/fmt/blkstream.c \
    lib/fmt/blkstream_read.c lib/fmt/blkstream_jsonl.c lib/base/jsonw.c \
    lib/base/error.c lib/base/fdio.c \
    lib/dec/ptdec.h lib/dec/ptimages.h lib/dec/bbcache.h lib/fmt/blkstream.h \
    lib/fmt/blkstream_int.h lib/dec/x86class.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $(filter %.c,$^) -lipt -lZydis -lpthread

fuzz-ptdec: $(DEC_FUZZ_DIR)/fuzz_ptdec
	@mkdir -p $(DEC_FUZZ_DIR)/corpus-ptdec
	$< $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=1024 \
	    $(DEC_FUZZ_DIR)/corpus-ptdec tests/fuzz/ptdec

FUZZ_RUNS += fuzz-blkstream fuzz-ptdec
FUZZ_BINS += $(DEC_FUZZ_DIR)/fuzz_blkstream $(DEC_FUZZ_DIR)/fuzz_ptdec
.PHONY: fuzz-blkstream fuzz-ptdec


# bench/decode.bench.sh compares ptdecode with a bare libipt loop.
DEC_BARE := $(BUILD)/bench/decode_bare
$(DEC_BARE): bench/decode_bare.c $(BUILD)/cmd/ptdecode/snapload.o $(LIBPTKIT)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) -iquote cmd/ptdecode $(ALL_CFLAGS) $(ALL_LDFLAGS) \
	    -o $@ $< $(BUILD)/cmd/ptdecode/snapload.o $(LIBPTKIT) $(LIBS_ALL)
BENCH_DEPS += $(DEC_BARE) $(BUILD)/tests/fixtures/emu/branchy

# bench/blocks.bench.sh: ns per record of the driver + writer and reader.
BLOCKS_BENCH := $(BUILD)/bench/blocks_bench
$(BLOCKS_BENCH): bench/blocks_bench.c $(LIBPTKIT)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< \
	    $(LIBPTKIT) $(LIBS_ALL)
BENCH_DEPS += $(BLOCKS_BENCH)
