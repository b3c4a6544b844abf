# query.mk: ptquery: the synthetic analysis generator its bench
# and tests use, and the demo program its tests record.
QUERY_GEN := $(BUILD)/bench/gen_analysis

$(QUERY_GEN): $(BUILD)/bench/gen_analysis.o $(LIBPTKIT)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBPTKIT) $(LIBS_ALL)

CHECK_DEPS += $(QUERY_GEN) $(DEMO_BIN)
BENCH_DEPS += $(QUERY_GEN)
