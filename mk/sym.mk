# Symbolization (lib/symtab): fixtures for tests/unit/t_symtab.c and the
# symtab bench.  Every fixture is built -O2 -g; the unit test compares the
# library with binutils (nm, readelf, objdump, addr2line) on these files.
SYM_FIX := $(BUILD)/fixtures/sym
SYM_SRC := tests/fixtures/sym
SYM_CFLAGS := -O2 -g -fno-omit-frame-pointer

SYM_FIXTURES := $(SYM_FIX)/inl $(SYM_FIX)/inl-pie $(SYM_FIX)/inl-dw4 \
	$(SYM_FIX)/inl-nosym $(SYM_FIX)/inl-gz $(SYM_FIX)/inl-zgnu \
	$(SYM_FIX)/cxx $(SYM_FIX)/libshl.so $(SYM_FIX)/memc \
	$(SYM_FIX)/strip/.done $(SYM_FIX)/strip-crc/.done $(SYM_FIX)/dwz/.done

# Non-PIE, DWARF 5 (the compiler's default).
$(SYM_FIX)/inl: $(SYM_SRC)/inl.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(SYM_CFLAGS) -fno-pie -no-pie -o $@ $<

$(SYM_FIX)/inl-pie: $(SYM_SRC)/inl.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(SYM_CFLAGS) -fPIE -pie -o $@ $<

$(SYM_FIX)/inl-dw4: $(SYM_SRC)/inl.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(SYM_CFLAGS) -gdwarf-4 -fPIE -pie -o $@ $<

# Compressed debug sections: ELF SHF_COMPRESSED, and the older .zdebug_*.
$(SYM_FIX)/inl-gz: $(SYM_SRC)/inl.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(SYM_CFLAGS) -fPIE -pie -gz=zlib -o $@ $<

$(SYM_FIX)/inl-zgnu: $(SYM_FIX)/inl-pie
	objcopy --compress-debug-sections=zlib-gnu $< $@

# static_worker gone from .symtab: only DWARF still knows it.
$(SYM_FIX)/inl-nosym: $(SYM_FIX)/inl-pie
	objcopy --strip-symbol=static_worker $< $@

$(SYM_FIX)/cxx: $(SYM_SRC)/cxx.cc | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(SYM_CFLAGS) -o $@ $<

$(SYM_FIX)/memc: $(SYM_SRC)/memc.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(SYM_CFLAGS) -o $@ $<

$(SYM_FIX)/libshl.so: $(SYM_SRC)/shlib.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(SYM_CFLAGS) -fPIC -shared -o $@ $<

# Stripped copies of inl-pie with separate debuginfo: link/ finds it by
# .gnu_debuglink (inl.debug beside it), bid/ only by build-id under root/.
$(SYM_FIX)/strip/.done: $(SYM_FIX)/inl-pie
	rm -rf $(@D) && mkdir -p $(@D)/link $(@D)/bid
	objcopy --only-keep-debug $< $(@D)/link/inl.debug
	objcopy --strip-all --add-gnu-debuglink=$(@D)/link/inl.debug $< \
	    $(@D)/link/inl
	cp $(@D)/link/inl $(@D)/bid/inl
	id=$$(readelf -n $< | sed -n 's/.*Build ID: *//p'); \
	    d=$(@D)/root/.build-id/$$(echo $$id | cut -c1-2); \
	    mkdir -p $$d && \
	    cp $(@D)/link/inl.debug $$d/$$(echo $$id | cut -c3-).debug
	touch $@

# Without a build-id: the debuglink's CRC-32 decides.  crc/ has the right
# inl.debug beside it, crcbad/ one of the same name with other contents.
$(SYM_FIX)/inl-noid: $(SYM_SRC)/inl.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(SYM_CFLAGS) -fPIE -pie -Wl,--build-id=none -o $@ $<

$(SYM_FIX)/strip-crc/.done: $(SYM_FIX)/inl-noid $(SYM_FIX)/strip/.done
	rm -rf $(@D) && mkdir -p $(@D)/crc $(@D)/crcbad
	objcopy --only-keep-debug $< $(@D)/crc/inl.debug
	objcopy --strip-all --add-gnu-debuglink=$(@D)/crc/inl.debug $< \
	    $(@D)/crc/inl
	cp $(@D)/crc/inl $(@D)/crcbad/inl
	cp $(SYM_FIX)/strip/link/inl.debug $(@D)/crcbad/inl.debug
	touch $@

# dwz: two copies of cxx share their DIEs through a supplementary file
# (.gnu_debugaltlink "common", found beside them).
$(SYM_FIX)/dwz/.done: $(SYM_FIX)/cxx
	rm -rf $(@D) && mkdir -p $(@D)
	cp $< $(@D)/a && cp $< $(@D)/b
	cd $(@D) && dwz -m common -M common a b
	touch $@

SYM_BENCH := $(BUILD)/bench/symtab_bench
$(SYM_BENCH): $(BUILD)/bench/symtab_bench.o $(LIBPTKIT)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBPTKIT) $(LIBS_ALL)

CHECK_DEPS += $(SYM_FIXTURES)
BENCH_DEPS += $(SYM_BENCH) $(SYM_FIXTURES)

# Fuzzers (make fuzz): symtab_open on any bytes, the JIT map reader on any
# text, each for FUZZ_SECONDS from its seed corpus in tests/fuzz/.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
SYM_LIB_SRCS := lib/sym/symtab.c lib/sym/symelf.c lib/sym/dwarfinfo.c \
	lib/sym/dwarfinfo_lazy.c lib/sym/dwarfimg.c lib/sym/debugfind.c \
	lib/sym/demangle.c lib/sym/jitmap.c lib/base/error.c lib/base/beneath.c
SYM_LIB_HDRS := lib/sym/symtab.h lib/sym/symtab_int.h lib/sym/dwarfinfo_int.h \
	lib/sym/dwarfimg.h lib/sym/debugfind.h lib/sym/demangle.h lib/base/error.h \
	lib/base/beneath.h

$(BUILD)/fuzz/fuzz_symtab $(BUILD)/fuzz/fuzz_jitmap: $(BUILD)/fuzz/%: \
    tests/fuzz/%.c $(SYM_LIB_SRCS) $(SYM_LIB_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=c17 -g -O1 -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=all -D_GNU_SOURCE -iquote lib -o $@ \
	    $< $(SYM_LIB_SRCS) -ldw -lelf -liberty -ldeflate

.PHONY: fuzz-symtab fuzz-jitmap
fuzz-symtab: $(BUILD)/fuzz/fuzz_symtab
	@mkdir -p $(BUILD)/fuzz/corpus-symtab
	$< $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -max_len=65536 $(BUILD)/fuzz/corpus-symtab tests/fuzz/symtab-seeds

fuzz-jitmap: $(BUILD)/fuzz/fuzz_jitmap
	@mkdir -p $(BUILD)/fuzz/corpus-jitmap
	$< $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -max_len=4096 \
	    $(BUILD)/fuzz/corpus-jitmap tests/fuzz/jitmap-seeds

FUZZ_RUNS += fuzz-symtab fuzz-jitmap
FUZZ_BINS += $(BUILD)/fuzz/fuzz_symtab $(BUILD)/fuzz/fuzz_jitmap
