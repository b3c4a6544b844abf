# ptkit.mk: decode every snapshot of a ptkit store into its default
# analysis, in parallel, rebuilding only what is stale (man ptkit.mk.5).
#
#   make -j8 -f /usr/local/share/ptkit/ptkit.mk STORE=~/.local/share/ptkit
#
# For each STORE/snapshots/<id>/ it makes <id>/derived/default/ with
# `ptdecode <id> | ptspans -o <id>/derived/default`.  An analysis is stale
# when the snapshot's manifest.json or perf.data is newer than the
# analysis's manifest.json.  A second run with nothing new does nothing.

ifeq ($(strip $(STORE)),)
$(error ptkit.mk: set STORE to a ptkit store directory)
endif

PTDECODE ?= ptdecode
PTSPANS ?= ptspans
PTDECODE_FLAGS ?= -j1
PTSPANS_FLAGS ?=

# The pipe must fail when ptdecode fails, not only when ptspans does.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -ec
.DELETE_ON_ERROR:

PTKIT_SNAPSHOTS := $(patsubst %/manifest.json,%,\
	$(wildcard $(STORE)/snapshots/*/manifest.json))
PTKIT_ANALYSES := $(PTKIT_SNAPSHOTS:%=%/derived/default/manifest.json)

.PHONY: all
all: $(PTKIT_ANALYSES)

# ptspans -o writes the directory beside its place and renames it in, so
# a failed or interrupted run leaves no half analysis behind.
%/derived/default/manifest.json: %/manifest.json %/perf.data
	@mkdir -p $*/derived
	@rm -rf $*/derived/default
	$(PTDECODE) $(PTDECODE_FLAGS) $* | $(PTSPANS) $(PTSPANS_FLAGS) -o $*/derived/default >/dev/null
