# consumers.mk: the programs people open ptkit's exports with, for the
# consumer tests (tests/e2e/t7003-chrome-consumers.sh): Chrome DevTools'
# trace engine and speedscope, pinned in tests/consumers/package.json and
# its lockfile and installed with `npm ci` into the build directory.
# Without npm or the registry the install is skipped and so are the tests.
CONSUMERS_DIR := $(BUILD)/trace-consumers
CONSUMERS_SCRIPTS := $(CONSUMERS_DIR)/engine-nesting.mjs \
	$(CONSUMERS_DIR)/speedscope-nesting.mjs

$(CONSUMERS_DIR)/%.mjs: tests/consumers/%.mjs $(CONSUMERS_DIR)/.installed
	cp $< $@

$(CONSUMERS_DIR)/.installed: tests/consumers/package.json \
    tests/consumers/package-lock.json
	@mkdir -p $(@D)
	cp tests/consumers/package.json tests/consumers/package-lock.json $(@D)/
	@if ! command -v npm >/dev/null 2>&1; then \
	    echo "consumers: no npm: the consumer tests will skip" >&2; \
	elif (cd $(@D) && npm ci --no-audit --no-fund --loglevel=error); then \
	    touch $@; \
	else \
	    echo "consumers: npm ci failed: the consumer tests will skip" >&2; \
	fi

CHECK_DEPS += $(CONSUMERS_SCRIPTS)
