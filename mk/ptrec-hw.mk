# The pt and perf recorders (Intel PT hardware): their unit tests link the
# recorder's own objects beside libptkit.
# The one snapshot writer and what it archives JIT code with.
PTREC_SNAPWRITE_OBJS := $(BUILD)/cmd/ptrec/snapwrite.o \
    $(BUILD)/cmd/ptrec/jit_archive.o
PTREC_HW_UNIT_OBJS := $(BUILD)/cmd/ptrec/pt_snapshot.o $(PTREC_SNAPWRITE_OBJS)
$(BUILD)/tests/unit/t_pt_snapshot.o: ALL_CPPFLAGS += -iquote cmd/ptrec

$(BUILD)/tests/unit/t_pt_snapshot: \
    $(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(PTREC_HW_UNIT_OBJS) $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(PTREC_HW_UNIT_OBJS) $(LIBPTKIT) \
	    $(LIBS_ALL)

$(BUILD)/tests/unit/t_perf_import.o: ALL_CPPFLAGS += -iquote cmd/ptrec
$(BUILD)/tests/unit/t_perf_import: \
    $(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o \
    $(BUILD)/cmd/ptrec/perf_import.o $(PTREC_SNAPWRITE_OBJS) $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/cmd/ptrec/perf_import.o \
	    $(PTREC_SNAPWRITE_OBJS) $(LIBPTKIT) $(LIBS_ALL)

# snapwrite: where snapshots go and how the one writer writes them.
$(BUILD)/tests/unit/t_snapwrite.o: ALL_CPPFLAGS += -iquote cmd/ptrec
$(BUILD)/tests/unit/t_snapwrite: \
    $(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(PTREC_SNAPWRITE_OBJS) \
    $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(PTREC_SNAPWRITE_OBJS) $(LIBPTKIT) \
	    $(LIBS_ALL)

# capture: the decisions shared by the recorders (filters, lines, policy).
$(BUILD)/tests/unit/t_capture.o: ALL_CPPFLAGS += -iquote cmd/ptrec
$(BUILD)/tests/unit/t_capture: \
    $(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o \
    $(BUILD)/cmd/ptrec/capture.o $(BUILD)/cmd/ptrec/elfsym.o $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/cmd/ptrec/capture.o \
	    $(BUILD)/cmd/ptrec/elfsym.o $(LIBPTKIT) $(LIBS_ALL)

# rec_pt's run on fake rings: every ptrec object but main.
PTREC_NO_MAIN_OBJS = $(filter-out $(BUILD)/cmd/ptrec/main.o,\
    $(call tool_objs,ptrec))
$(BUILD)/tests/unit/t_rec_pt.o: ALL_CPPFLAGS += -iquote cmd/ptrec
$(BUILD)/tests/unit/t_rec_pt: \
    $(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(PTREC_NO_MAIN_OBJS) \
    $(LIBPTKIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(PTREC_NO_MAIN_OBJS) $(LIBPTKIT) \
	    $(LIBS_ALL)
