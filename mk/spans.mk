# spans.mk: ptspans (issue #6): the call-stack engine's link needs, its
# fuzzer, its e2e fixtures and its bench.
#
# lib/codemap.c decodes x86 with Zydis (see codemap.h for why), so every
# program that links it adds -lZydis.

$(BUILD)/bin/ptspans: LIBS_ALL += -lZydis
$(BUILD)/tests/unit/t_codemap: LIBS_ALL += -lZydis
