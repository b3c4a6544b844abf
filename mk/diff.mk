# ptdiff: its test fixture, and the batch Makefile fragment (ptkit.mk).
# Both builds are called work, in two directories, as base and head
# builds of one program are.
DIFF_FIXTURES := $(BUILD)/fixtures/diff/base/work \
	$(BUILD)/fixtures/diff/head/work $(BUILD)/fixtures/diff/clone/work
CHECK_DEPS += $(DIFF_FIXTURES)

# The fixture is built without sanitizers: emu runs it under qemu.
$(BUILD)/fixtures/diff/base/work: tests/fixtures/diff/work.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) -O2 -g -o $@ $<

$(BUILD)/fixtures/diff/head/work: tests/fixtures/diff/work.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) -O2 -g -DRENAMED -o $@ $<

$(BUILD)/fixtures/diff/clone/work: tests/fixtures/diff/work.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) -O2 -g -DCLONED -o $@ $<

INSTALL_EXTRA += install-ptkit-mk

.PHONY: install-ptkit-mk uninstall-ptkit-mk
install-ptkit-mk:
	mkdir -p $(DESTDIR)$(DATADIR)
	install -m 0644 share/ptkit.mk $(DESTDIR)$(DATADIR)/ptkit.mk

uninstall: uninstall-ptkit-mk
uninstall-ptkit-mk:
	rm -f $(DESTDIR)$(DATADIR)/ptkit.mk

# compare: the pairing rules, with ptdiff's own object beside libptkit.
$(BUILD)/tests/unit/t_compare.o: ALL_CPPFLAGS += -iquote cmd/ptdiff
$(BUILD)/tests/unit/t_compare: \
    $(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o \
    $(BUILD)/cmd/ptdiff/compare.o $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/cmd/ptdiff/compare.o \
	    $(LIBPTKIT) $(LIBS_ALL)
