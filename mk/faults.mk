# faults.mk: the long fault campaign.
#
# check-long runs what is too slow for make check: the whole mutation
# campaign (tests/faults/mutate.sh, 40 damages of each kind to each file
# a reader reads, strict: an analysis's file that answers otherwise with
# exit 0 fails; make check runs a sample of it as t5005) and the two
# servers racing on one store for a minute (t0921, 20 s in make check);
# and it builds every fuzzer (check-fuzz-build).
MUTATE_N ?= 40

.PHONY: check-long
check-long: all $(CHECK_DEPS) | $(RUN_DEPS_STAMP)
	$(TEST_ENV) sh tests/faults/mutate.sh -n $(MUTATE_N)
	$(TEST_ENV) PTKIT_LONG=1 $(PROVE) tests/e2e/t0921-mcp-two-servers.sh
	@$(MAKE) --no-print-directory check-fuzz-build
