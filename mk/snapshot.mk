# snapshot.mk: the snapshot format's test tools, fixtures and fuzzer
# (issue 3).
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
	$(CC) $(ALL_LDFLAGS) -o $@ $(SNAP_TOOL_OBJS) $(LIBPTKIT) $(LIBS_ALL) \
	    -lZydis

$(BUILD)/tests/fixtures/snap/%: tests/fixtures/snap/%.c
	@mkdir -p $(@D)
	$(CC) $(SNAP_FIXTURE_CFLAGS) -o $@ $<

$(BUILD)/tests/fixtures/snap/%.static: tests/fixtures/snap/%.c
	@mkdir -p $(@D)
	$(CC) $(SNAP_FIXTURE_CFLAGS) -static -o $@ $<

CHECK_DEPS += $(SNAP_MKSNAP) $(SNAP_FIXTURES)
