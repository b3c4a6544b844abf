# The bundled demo program that `make demo` records.  Without sibling-call
# optimisation gcc keeps fib's recursion as calls (it would otherwise turn
# fib(n-2) into a loop), so the spans match the counts the program prints.
DEMO_BIN := $(BUILD)/fixtures/demo

$(DEMO_BIN): tests/fixtures/demo/demo.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -o $@ $<

demo: $(DEMO_BIN)
