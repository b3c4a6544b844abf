# mcp.mk: ptmcp's fuzzer.
#
# fuzz-jsonrpc runs a libFuzzer target over what a client can send to
# `ptmcp serve` (line reader, JSON-RPC classification, replies, tool
# argument checks) under ASan and UBSan, for FUZZ_SECONDS, starting from
# the seed corpus in tests/fuzz/jsonrpc-seeds.  New inputs it finds stay
# in the build directory.

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_JSONRPC := $(BUILD)/fuzz/fuzz_jsonrpc
FUZZ_JSONRPC_SRCS := tests/fuzz/fuzz_jsonrpc.c lib/fmt/jsonrpc.c lib/base/jsonw.c \
	lib/base/error.c cmd/ptmcp/schema.c cmd/ptmcp/tools.c
FUZZ_JSONRPC_HDRS := lib/fmt/jsonrpc.h lib/base/jsonw.h lib/base/error.h \
	cmd/ptmcp/schema.h cmd/ptmcp/tools.h

$(FUZZ_JSONRPC): $(FUZZ_JSONRPC_SRCS) $(FUZZ_JSONRPC_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=c17 -g -O1 -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=all -D_GNU_SOURCE -iquote lib \
	    -iquote cmd/ptmcp $(PKG_CFLAGS) -o $@ $(FUZZ_JSONRPC_SRCS) \
	    $(PKG_LIBS)

.PHONY: fuzz-jsonrpc
fuzz-jsonrpc: $(FUZZ_JSONRPC)
	@mkdir -p $(BUILD)/fuzz/corpus-jsonrpc
	$(FUZZ_JSONRPC) $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) -max_len=8192 \
	    $(BUILD)/fuzz/corpus-jsonrpc tests/fuzz/jsonrpc-seeds

FUZZ_RUNS += fuzz-jsonrpc
FUZZ_BINS += $(FUZZ_JSONRPC)

# The MCP conformance test (tests/e2e/t0903-mcp-sdk.sh) drives ptmcp with
# the official TypeScript SDK client, pinned in tests/mcp/package.json and
# its lockfile and installed with `npm ci` into the build directory.
# Without npm or the registry the install is skipped and so is the test.
MCP_CLIENT_DIR := $(BUILD)/mcp-client

$(MCP_CLIENT_DIR)/client.mjs: tests/mcp/client.mjs \
    $(MCP_CLIENT_DIR)/.installed
	cp tests/mcp/client.mjs $@

$(MCP_CLIENT_DIR)/.installed: tests/mcp/package.json \
    tests/mcp/package-lock.json
	@mkdir -p $(@D)
	cp tests/mcp/package.json tests/mcp/package-lock.json $(@D)/
	@if ! command -v npm >/dev/null 2>&1; then \
	    echo "mcp: no npm: the SDK conformance test will skip" >&2; \
	elif (cd $(@D) && npm ci --no-audit --no-fund --loglevel=error); then \
	    touch $@; \
	else \
	    echo "mcp: npm ci failed: the SDK conformance test will skip" >&2; \
	fi

CHECK_DEPS += $(MCP_CLIENT_DIR)/client.mjs

# The agent test's program (tests/fixtures/mcp/agent.c): built as users
# build releases, -O2 with link-time optimisation, so that its helper is
# inlined and its functions are cloned (resolve.constprop.0).
MCP_AGENT := $(BUILD)/tests/fixtures/mcp/agent

$(MCP_AGENT): tests/fixtures/mcp/agent.c
	@mkdir -p $(@D)
	$(CC) -std=gnu17 -O2 -g -flto -Wall -pthread -o $@ $<

CHECK_DEPS += $(MCP_AGENT)

$(MCP_CLIENT_DIR)/agent.mjs: tests/mcp/agent.mjs $(MCP_CLIENT_DIR)/.installed
	cp tests/mcp/agent.mjs $@

CHECK_DEPS += $(MCP_CLIENT_DIR)/agent.mjs
