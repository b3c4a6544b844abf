/*
 * Tests for cmd/ptdiff/compare: which names are versions of one function
 * (the clone suffixes gcc and clang give, a cold part kept a cold part),
 * and the noise band as given on the command line.
 */
#include <string.h>

#include "compare.h"
#include "tap.h"

static void
base_is(const char *name, const char *want)
{
	char buf[256];
	size_t len = clone_base(name, buf, sizeof(buf));

	IS_STR(buf, want, "%s -> %s", name, want);
	IS_INT(len, strlen(want), "%s: its length", name);
}

static void
test_clone_base(void)
{
	base_is("scale", "scale");
	base_is("scale.constprop.0", "scale");
	base_is("helper.isra.0", "helper");
	base_is("work.part.3", "work");
	base_is("inner.llvm.5868842589039305719", "inner");
	base_is("dup.lto_priv.0", "dup");
	base_is("f.constprop.0.isra.0", "f");
	base_is("f.isra.0.constprop.1", "f");
	base_is("main.cold", "main.cold");
	base_is("main.cold.1", "main.cold");
	base_is("f.constprop.0.cold", "f.cold");
	base_is("f.part.0.cold.2", "f.cold");
	/* Not suffixes: no number, or a name that only looks like one. */
	base_is("f.constprop.", "f.constprop.");
	base_is("f.constprop", "f.constprop");
	base_is(".cold", ".cold");
	base_is("cold", "cold");
	base_is("f.2", "f.2");
	base_is("v8.isra", "v8.isra");
}

static void
test_noise_parse(void)
{
	struct noise_spec n;
	struct error e;

	IS_INT(noise_parse("200", &n, &e), 0, "a count");
	OK(n.given && !n.pct && n.value == 200, "200 instructions");
	IS_INT(noise_parse("0.1%", &n, &e), 0, "a share");
	OK(n.given && n.pct && n.value == 0.1, "0.1%% of the capture's");
	IS_INT(noise_parse("0", &n, &e), 0, "0 turns it off");
	IS_INT(noise_parse("-3", &n, &e), -ERR_INVALID, "not negative");
	IS_STR(e.msg, "'-3': expected a number of instructions like 200, or a "
	    "share of the capture's like 0.1%", "says the forms");
	IS_INT(noise_parse("", &n, &e), -ERR_INVALID, "not empty");
	IS_INT(noise_parse("5%%", &n, &e), -ERR_INVALID, "one %% sign");
	IS_INT(noise_parse("x", &n, &e), -ERR_INVALID, "not a word");
	IS_INT(noise_parse("inf", &n, &e), -ERR_INVALID, "not infinite");
}

int
main(void)
{
	test_clone_base();
	test_noise_parse();
	return tap_done();
}
