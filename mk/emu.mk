# emu.mk: the emu recorder's qemu plugin, its fixtures and its unit tests
# (ptrec --recorder emu).
#
# The plugin is a shared object qemu-x86_64 dlopens: position-independent,
# hidden visibility except the two qemu_plugin_* symbols, never built with
# SANITIZE flags (qemu is not sanitized), linked against Zydis
# (instruction classes, through lib/dec/x86class) and libelf
# (cmd/ptrec/elfsym finds the stop indicators in each image it maps).  ptrec finds it beside itself at
# ../lib/ptkit/libptkit-emu.so, which is where both the build tree and
# `make install` ($(PKGLIBDIR)) put it.

EMU_PLUGIN := $(BUILD)/lib/ptkit/libptkit-emu.so
# lib/dec/x86class.c is built in too: the plugin classifies branches with
# the same table as the decoders (and no sanitizer flags come with it).
EMU_PLUGIN_SRCS := $(sort $(wildcard cmd/ptrec/emu/*.c)) cmd/ptrec/emu_handoff.c \
	lib/dec/x86class.c cmd/ptrec/elfsym.c lib/base/error.c
EMU_PLUGIN_OBJS := $(EMU_PLUGIN_SRCS:%.c=$(BUILD)/emu-plugin/%.o)
# -flto: the per-block path crosses emu_plugin, emu_trace and emu_enc;
# inlining across them is worth 10-20% of the recording rate.
EMU_PLUGIN_CFLAGS := -std=c17 $(WARNINGS) $(CFLAGS) -fPIC -fvisibility=hidden \
	-flto
EMU_INCLUDES := -iquote cmd/ptrec -iquote cmd/ptrec/emu

$(BUILD)/emu-plugin/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) -D_GNU_SOURCE -iquote lib $(EMU_INCLUDES) $(CPPFLAGS) \
	    $(EMU_PLUGIN_CFLAGS) -MMD -MP -c -o $@ $<

$(EMU_PLUGIN): $(EMU_PLUGIN_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared $(EMU_PLUGIN_CFLAGS) -o $@ $(EMU_PLUGIN_OBJS) $(LDFLAGS) \
	    -lZydis -lelf -lpthread

all: $(EMU_PLUGIN)

# Fixtures: small programs recorded by the e2e tests, each built static
# and dynamic.  -fno-if-conversion keeps their branches branches.
EMU_FIXTURE_SRCS := $(sort $(wildcard tests/fixtures/emu/*.c))
EMU_FIXTURE_NAMES := $(EMU_FIXTURE_SRCS:tests/fixtures/emu/%.c=%)
EMU_FIXTURES := $(EMU_FIXTURE_NAMES:%=$(BUILD)/tests/fixtures/emu/%) \
	$(EMU_FIXTURE_NAMES:%=$(BUILD)/tests/fixtures/emu/%.static)
EMU_FIXTURE_CFLAGS := -std=gnu17 -O1 -g -fno-if-conversion \
	-fno-if-conversion2 -fno-inline-small-functions -Wall -pthread

$(BUILD)/tests/fixtures/emu/%: tests/fixtures/emu/%.c
	@mkdir -p $(@D)
	$(CC) $(EMU_FIXTURE_CFLAGS) -o $@ $<

$(BUILD)/tests/fixtures/emu/%.static: tests/fixtures/emu/%.c
	@mkdir -p $(@D)
	$(CC) $(EMU_FIXTURE_CFLAGS) -static -o $@ $<

# ticker linked without a build-id: perf cannot find its archived copy.
EMU_LIB_FIXTURES_NOBID := $(BUILD)/tests/fixtures/emu/ticker.nobuildid
$(BUILD)/tests/fixtures/emu/ticker.nobuildid: tests/fixtures/emu/ticker.c
	@mkdir -p $(@D)
	$(CC) $(EMU_FIXTURE_CFLAGS) -Wl,--build-id=none -o $@ $<

# A program whose stop indicator is in a shared library beside it.
EMU_LIB_FIXTURES := $(BUILD)/tests/fixtures/emu/libstopind.so \
	$(BUILD)/tests/fixtures/emu/stopind_so
$(BUILD)/tests/fixtures/emu/libstopind.so: tests/fixtures/emu/lib/libstopind.c
	@mkdir -p $(@D)
	$(CC) $(EMU_FIXTURE_CFLAGS) -fPIC -shared -o $@ $<
$(BUILD)/tests/fixtures/emu/stopind_so: tests/fixtures/emu/lib/stopind_so.c \
    $(BUILD)/tests/fixtures/emu/libstopind.so
	$(CC) $(EMU_FIXTURE_CFLAGS) -o $@ $< -L$(@D) -lstopind \
	    -Wl,-rpath,'$$ORIGIN'

# Unit tests of the plugin's parts link those parts (built the normal way,
# sanitizers included: the test is not loaded into qemu).
EMU_UNIT_OBJS := $(BUILD)/cmd/ptrec/emu/emu_enc.o \
	$(BUILD)/cmd/ptrec/emu/emu_cls.o $(BUILD)/cmd/ptrec/emu/emu_trace.o \
	$(BUILD)/cmd/ptrec/emu_handoff.o
$(EMU_UNIT_OBJS): ALL_CPPFLAGS += $(EMU_INCLUDES)
$(BUILD)/tests/unit/t_emu_%.o: ALL_CPPFLAGS += $(EMU_INCLUDES)

$(BUILD)/tests/unit/t_emu_enc: \
    $(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(EMU_UNIT_OBJS) $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(EMU_UNIT_OBJS) $(LIBPTKIT) \
	    $(LIBS_ALL)

# emu_snapshot reading what the plugin left, with the writer it hands to.
EMU_SNAPSHOT_UNIT_OBJS := $(BUILD)/cmd/ptrec/emu_snapshot.o \
	$(BUILD)/cmd/ptrec/emu_handoff.o $(BUILD)/cmd/ptrec/snapwrite.o \
	$(BUILD)/cmd/ptrec/jit_archive.o
$(BUILD)/tests/unit/t_emu_snapshot: \
    $(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(EMU_SNAPSHOT_UNIT_OBJS) \
    $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(EMU_SNAPSHOT_UNIT_OBJS) $(LIBPTKIT) \
	    $(LIBS_ALL)

CHECK_DEPS += $(EMU_PLUGIN) $(EMU_FIXTURES) $(EMU_LIB_FIXTURES) \
	$(EMU_LIB_FIXTURES_NOBID)
# bench/emu.bench.sh runs the branchy fixture and bench/indirect.c (an
# indirect jump every few instructions; built as the fixtures are)
# natively, under plain qemu and under ptrec --recorder emu.
EMU_BENCH_INDIRECT := $(BUILD)/bench/indirect.static
$(EMU_BENCH_INDIRECT): bench/indirect.c
	@mkdir -p $(@D)
	$(CC) $(EMU_FIXTURE_CFLAGS) -static -o $@ $<
BENCH_DEPS += $(EMU_PLUGIN) $(BUILD)/tests/fixtures/emu/branchy.static \
	$(EMU_BENCH_INDIRECT)

install-emu: $(EMU_PLUGIN)
	mkdir -p $(DESTDIR)$(PKGLIBDIR)
	install -m 0755 $(EMU_PLUGIN) $(DESTDIR)$(PKGLIBDIR)/

uninstall-emu:
	rm -f $(DESTDIR)$(PKGLIBDIR)/libptkit-emu.so

INSTALL_EXTRA += install-emu
.PHONY: install-emu uninstall-emu
