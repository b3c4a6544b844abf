# fastdec.mk: the fast decoder's checks (ptdec_fast): a fuzzer that decodes
# the same ring with ptdec_backend_fast and ptdec_backend_libipt and aborts
# when their records differ (tests/fuzz/fuzz_ptdec_fast.c).  The e2e
# comparison on every fixture is tests/e2e/t5001-fast-decoder.sh.
#
# The fuzzer links an archive of every lib/*/*.c built with the fuzz flags
# (see decode.mk), so that the modules the fast decoder grows into are
# found without listing them here; the link takes only what it needs.  Its
# code images are the static emu fixtures, whose rings the seeds in
# tests/fuzz/ptdec_fast/ are cut from (byte 0 of an input picks the
# image: 0 fuzz_ptdec's loop, 1.. the fixtures in this order, bit 7 the
# code-walking packet generator instead of a raw ring; byte 1 the decode
# configuration, 0 as emu records; then the ring or the generator's
# program).  tests/fuzz/mkseeds-ptdec-fast.sh makes the seeds; the bug-*
# seeds are the fuzzer's finds, kept so that a fix is checked first.

# The walker's loop (lib/dec/ptdec_fast.c, with the encoder inlined from
# blkstream.h and ptdec.h, and the queries from ptdec_fast_qry.h) runs
# some 5 % faster at -O3 than at -O2 on the bench snapshot (CPU seconds,
# best of 9 alternating runs); the packet reader and the query decoder
# (ptdec_fast_pkt.c, ptdec_fast_qry.c) are part of it.  Appended, so
# that -O3 comes after the CFLAGS default; a CFLAGS given on the command
# line still wins.
FASTDEC_O3_OBJS := $(patsubst %.c,$(BUILD)/%.o,\
	$(wildcard lib/dec/ptdec_fast*.c))
$(FASTDEC_O3_OBJS): CFLAGS += -O3

FASTDEC_FUZZ := $(DEC_FUZZ_DIR)/fuzz_ptdec_fast
FASTDEC_FUZZ_OBJS := $(LIB_SRCS:%.c=$(DEC_FUZZ_DIR)/obj/%.o)
FASTDEC_FUZZ_LIB := $(DEC_FUZZ_DIR)/libptkit-fuzz.a
FASTDEC_FUZZ_FIX := $(addprefix $(BUILD)/tests/fixtures/emu/, \
	branchy.static signals.static threads.static segvjmp.static)
fastdec_empty :=
fastdec_space := $(fastdec_empty) $(fastdec_empty)
FASTDEC_FUZZ_FIX_LIST := $(subst $(fastdec_space),:,$(strip \
	$(abspath $(FASTDEC_FUZZ_FIX))))

$(DEC_FUZZ_DIR)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(ALL_CPPFLAGS) $(PKG_CFLAGS) -MMD -MP \
	    -c -o $@ $<

$(FASTDEC_FUZZ_LIB): $(FASTDEC_FUZZ_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(FASTDEC_FUZZ): tests/fuzz/fuzz_ptdec_fast.c $(FASTDEC_FUZZ_LIB) \
    $(FASTDEC_FUZZ_FIX)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) \
	    -DFASTDEC_FIXTURES='"$(FASTDEC_FUZZ_FIX_LIST)"' -o $@ $< \
	    $(FASTDEC_FUZZ_LIB) $(LIBS_ALL)

# The seed corpus is read-only input; new finds go to the build dir.
fuzz-ptdec-fast: $(FASTDEC_FUZZ)
	@mkdir -p $(DEC_FUZZ_DIR)/corpus-ptdec-fast
	$< $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -rss_limit_mb=2048 $(DEC_FUZZ_DIR)/corpus-ptdec-fast \
	    tests/fuzz/ptdec_fast

FUZZ_RUNS += fuzz-ptdec-fast
FUZZ_BINS += $(FASTDEC_FUZZ)
.PHONY: fuzz-ptdec-fast
