# The bundled demo program that `make demo` records.
DEMO_BIN := $(BUILD)/fixtures/demo

$(DEMO_BIN): tests/fixtures/demo/demo.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) -O2 -g -fno-omit-frame-pointer -o $@ $<

demo: $(DEMO_BIN)
