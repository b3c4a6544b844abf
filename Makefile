# ptkit: build, test, install.  GNU make; parallel builds are safe.
#
#   make                 build everything (checks the Debian build packages)
#   make check           build and run the tests (TAP, under prove)
#   make check SANITIZE=address,undefined
#   make demo            record, decode and summarise the bundled demo
#   make bench           print performance figures (never asserted)
#   make fuzz            run each fuzzer for FUZZ_SECONDS
#   make install [PREFIX=/usr/local] [DESTDIR=...]  /  make uninstall
#   make deps            install the Debian 12 packages we need (root)
#
# make and make all need only the build packages (scripts/deps.sh
# --list-build); check, demo, bench and fuzz also the packages running and
# testing need (--list-test).  As root a missing package is installed with
# apt-get; as another user the build stops with the apt-get line to run.

VERSION   := 0.1.0
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
MANDIR    ?= $(PREFIX)/share/man
PKGLIBDIR ?= $(PREFIX)/lib/ptkit
DATADIR   ?= $(PREFIX)/share/ptkit

TOOLS := ptrec ptdecode ptspans ptquery ptdiff ptmcp

comma := ,
SANITIZE ?=
ifeq ($(SANITIZE),)
BUILD ?= build
else
BUILD ?= build-$(subst $(comma),-,$(SANITIZE))
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
endif

# One spelling of the build directory: an absolute BUILD inside the tree
# (make -C src BUILD=$PWD/build) would write .d files whose targets the
# relative spelling never matches, and header changes would go unseen.
override BUILD := $(patsubst $(CURDIR)/%,%,$(BUILD))

# libFuzzer writes crash-, leak-, timeout- and slow-unit- files into the
# current directory unless told otherwise: keep them in the build dir.
FUZZ_RUN_FLAGS = -artifact_prefix=$(BUILD)/fuzz-

PKGS := libelf libdw libzstd jansson nettle
CC ?= cc
CFLAGS ?= -O2 -g
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wno-missing-field-initializers
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ALL_CPPFLAGS = -D_GNU_SOURCE -DPTKIT_VERSION='"$(VERSION)"' \
	-DPTKIT_PKGLIBDIR='"$(PKGLIBDIR)"' -iquote lib $(CPPFLAGS)
ALL_CFLAGS = -std=c17 $(WARNINGS) $(SAN_FLAGS) $(PKG_CFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SAN_FLAGS) $(LDFLAGS)

# lib/ is built in layers (ARCHITECTURE.md says what each owns, and
# scripts/layers.sh, run by make check, that a module includes only from
# its own layer and those it may use).  One archive per layer, each with
# the link flags its code needs.  LAYERS lists users before what they use,
# the order in which a static link must see the archives.  The flags are
# expanded when a link runs, not when make reads this file: on a fresh
# machine `make check` installs the packages (DEPS_STAMP) first, and
# pkg-config asked before that would give nothing.
LAYERS := span dec rec fmt sym tool base
LDLIBS_base = $(shell pkg-config --libs jansson 2>/dev/null) -lpthread -lm
LDLIBS_tool =
LDLIBS_sym = $(shell pkg-config --libs libelf libdw 2>/dev/null) -ldeflate \
	-liberty
LDLIBS_fmt = $(shell pkg-config --libs libzstd libelf jansson nettle \
	2>/dev/null)
LDLIBS_rec =
LDLIBS_dec = -lipt -lZydis -lpthread
LDLIBS_span = -lZydis $(shell pkg-config --libs jansson 2>/dev/null)
LIBS_ALL = $(foreach l,$(LAYERS),$(LDLIBS_$(l))) $(LDLIBS)

layer_srcs = $(sort $(wildcard lib/$(1)/*.c))
LIB_SRCS := $(foreach l,$(LAYERS),$(call layer_srcs,$(l)))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LAYER_ARCHIVES := $(LAYERS:%=$(BUILD)/lib/libptkit-%.a)
# What a program of the project links: every layer, in link order.
LIBPTKIT := $(LAYER_ARCHIVES)

tool_srcs = $(sort $(wildcard cmd/$(1)/*.c))
tool_objs = $(patsubst %.c,$(BUILD)/%.o,$(call tool_srcs,$(1)))
TOOL_BINS := $(TOOLS:%=$(BUILD)/bin/%)

UNIT_SRCS := $(sort $(wildcard tests/unit/t_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)
UNIT_HELPER_SRCS := $(sort $(wildcard tests/unit/helper_*.c))
UNIT_HELPERS := $(UNIT_HELPER_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)
E2E_TESTS := $(sort $(wildcard tests/e2e/t*.sh))

MANPAGES := $(sort $(wildcard man/*.[1-9]))

# DEPS_STAMP: the build packages are there (every compile waits for it);
# RUN_DEPS_STAMP: so are those of running and testing.
DEPS_STAMP := $(BUILD)/.deps-build-ok
RUN_DEPS_STAMP := $(BUILD)/.deps-ok

.DEFAULT_GOAL := all

# Each area of the project may add its own rules in mk/<area>.mk (the emu
# plugin, fixtures, fuzzers, ...), so that parallel work does not collide
# here.  They see every variable above and add to CHECK_DEPS (built before
# tests run), BENCH_DEPS, FUZZ_RUNS (targets that run one fuzzer each),
# FUZZ_BINS (the fuzzers themselves, which make check-long builds),
# INSTALL_EXTRA (install targets) and CLEAN_EXTRA.
include $(sort $(wildcard mk/*.mk))

.PHONY: all deps check check-unit check-e2e check-man check-fuzz-build \
	demo bench fuzz \
	install uninstall clean
.DELETE_ON_ERROR:
.SECONDARY:

all: $(TOOL_BINS)

# Debian packages: checked once per build directory, installed if missing.
$(DEPS_STAMP): scripts/deps.sh
	@mkdir -p $(@D)
	@sh scripts/deps.sh --if-missing-build
	@touch $@

$(RUN_DEPS_STAMP): scripts/deps.sh
	@mkdir -p $(@D)
	@sh scripts/deps.sh --if-missing
	@touch $@

# What only tests, the demo, benchmarks and fuzzers use is built after the
# check of the packages they need (qemu, perf, dwz, ...), so that a missing
# one stops the build with deps.sh's apt-get line, not a confusing failure;
# what `all` builds is not held up by it.
TEST_ONLY_TARGETS = $(filter-out $(TOOL_BINS) $(EMU_PLUGIN),\
	$(UNIT_BINS) $(UNIT_HELPERS) $(CHECK_DEPS) $(BENCH_DEPS))
check check-unit check-e2e check-man demo bench fuzz $(FUZZ_RUNS): \
    | $(RUN_DEPS_STAMP)
$(TEST_ONLY_TARGETS): | $(RUN_DEPS_STAMP)

deps:
	@sh scripts/deps.sh

$(BUILD)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

define layer_rule
$(BUILD)/lib/libptkit-$(1).a: $(patsubst %.c,$(BUILD)/%.o,$(call layer_srcs,$(1)))
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rule,$(l))))

define tool_rule
$(BUILD)/bin/$(1): $(call tool_objs,$(1)) $(LIBPTKIT)
	@mkdir -p $$(@D)
	$$(CC) $$(ALL_LDFLAGS) -o $$@ $(call tool_objs,$(1)) $(LIBPTKIT) $$(LIBS_ALL)
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))

$(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBPTKIT) $(LIBS_ALL)

# Tests: TAP under prove.  LC_ALL=C so that messages and sorting are stable.
TEST_ENV = LC_ALL=C PTKIT_BUILD=$(abspath $(BUILD)) \
	PTKIT_SRC=$(CURDIR) PATH=$(abspath $(BUILD))/bin:$$PATH
PROVE ?= prove
PROVE_FLAGS ?= -j2

check: all $(UNIT_BINS) $(UNIT_HELPERS) $(CHECK_DEPS)
	$(TEST_ENV) $(PROVE) $(PROVE_FLAGS) $(UNIT_BINS) $(E2E_TESTS)
	@$(MAKE) --no-print-directory check-man

# The fuzzers are built, not run, by make check-long (a minute and a half
# of CPU, which make check has no room for): one that no longer builds (a
# parser that gained a source file) is found without fuzzing.  make fuzz
# runs them; without clang they are left, and that is said.
check-fuzz-build:
	@if command -v $(FUZZ_CC) >/dev/null 2>&1; then \
	    $(MAKE) --no-print-directory $(FUZZ_BINS); \
	else \
	    echo "check: the fuzzers were not built: $(FUZZ_CC) not found"; \
	fi

check-unit: $(UNIT_BINS) $(UNIT_HELPERS) $(CHECK_DEPS)
	$(TEST_ENV) $(PROVE) $(PROVE_FLAGS) $(UNIT_BINS)

check-e2e: all $(CHECK_DEPS)
	$(TEST_ENV) $(PROVE) $(PROVE_FLAGS) $(E2E_TESTS)

check-man:
	mandoc -T lint -W warning $(MANPAGES)

demo: all
	@$(TEST_ENV) sh scripts/demo.sh

# Each mk/<area>.mk adds its fuzz-<name> targets to FUZZ_RUNS.
fuzz: $(FUZZ_RUNS)

bench: all $(BENCH_DEPS)
	@$(TEST_ENV) sh bench/run.sh

install: all $(INSTALL_EXTRA)
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(MANDIR)/man5
	install -m 0755 $(TOOL_BINS) $(DESTDIR)$(BINDIR)/
	install -m 0644 $(filter %.1,$(MANPAGES)) $(DESTDIR)$(MANDIR)/man1/
	$(if $(filter %.5,$(MANPAGES)),install -m 0644 $(filter %.5,$(MANPAGES)) \
	    $(DESTDIR)$(MANDIR)/man5/)

uninstall:
	rm -f $(TOOLS:%=$(DESTDIR)$(BINDIR)/%)
	rm -f $(patsubst man/%,$(DESTDIR)$(MANDIR)/man1/%,$(filter %.1,$(MANPAGES)))
	rm -f $(patsubst man/%,$(DESTDIR)$(MANDIR)/man5/%,$(filter %.5,$(MANPAGES)))

clean:
	rm -rf build build-* $(CLEAN_EXTRA)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
