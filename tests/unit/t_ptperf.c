/*
 * Tests for lib/ptperf: the perf event string names every format/ field so
 * that perf programs exactly our config, and the perf record argv.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec/ptconfig.h"
#include "rec/ptperf.h"
#include "tap.h"

static struct ptcaps skylake;

/* Reads "name=value" terms back into a config with the format bits. */
static uint64_t
config_of(const char *event)
{
	char copy[1024], *save = NULL, *t, *eq;
	uint64_t cfg = 0;
	int i;

	snprintf(copy, sizeof(copy), "%s", event + strlen("intel_pt/"));
	*strrchr(copy, '/') = '\0';
	for (t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		eq = strchr(t, '=');
		*eq = '\0';
		for (i = 0; i < PTF_COUNT; i++)
			if (strcmp(t, ptcaps_fmt_name(i)) == 0)
				STEP(ptconfig_set(&skylake.pmu, i, strtoull(eq + 1,
				    NULL, 10), &cfg, NULL));
	}
	return cfg;
}

static void
test_event(void)
{
	char buf[1024];
	struct error e;
	int n;

	n = ptperf_event(&skylake, 0x3082603, buf, sizeof(buf), &e);
	IS_STR(buf, "intel_pt/pt=1,cyc=1,pwr_evt=0,fup_on_ptw=0,mtc=1,tsc=1,"
	    "noretcomp=0,ptw=0,branch=1,mtc_period=0,cyc_thresh=1,"
	    "psb_period=3,event=0,notnt=0/u", "normal as perf terms");
	IS_INT(n, (int)strlen(buf), "length returned");
	IS_U64(config_of(buf), 0x3082603, "the terms give back the config");
	STEP(ptperf_event(&skylake, 0x300E601, buf, sizeof(buf), &e));
	IS_U64(config_of(buf), 0x300E601, "low round-trips");
	STEP(ptperf_event(&skylake, 0x3082E03, buf, sizeof(buf), &e));
	IS_U64(config_of(buf), 0x3082E03, "high round-trips");
	IS_INT(ptperf_event(&skylake, 0x2400, buf, sizeof(buf), &e),
	    -ERR_UNSUPPORTED, "a config the kernel refuses");
	IS_STR(e.msg, "config sets branch without pt, which the kernel "
	    "refuses (branch tracing is always on unless pt is set)",
	    "the same message as ptconfig");
	IS_INT(ptperf_event(&skylake, 0x3082603, buf, 20, &e), -ERR_RANGE,
	    "too small a buffer");
}

static char *
joined(const struct ptperf_argv *a)
{
	static char buf[4096];
	size_t i;

	buf[0] = '\0';
	for (i = 0; i < a->argc; i++) {
		strcat(buf, i ? " " : "");
		strcat(buf, a->argv[i]);
	}
	return buf;
}

static void
test_argv(void)
{
	char *prog[] = { "/usr/bin/x", "-n", "3", NULL };
	struct ptperf_opts o = {
		.perf = "/usr/bin/perf", .config = 0x3082603,
		.aux_bytes = 4 << 20, .data_bytes = 64 << 10,
		.filter = "filter 0x1040/0x2a@/usr/bin/x",
		.ctl_fifo = "/tmp/s/ctl", .ack_fifo = "/tmp/s/ack",
		.output = "/tmp/s/perf.data", .program = prog,
	};
	struct ptperf_argv a;
	struct error e;

	IS_INT(ptperf_argv_build(&skylake, &o, &a, &e), 0, "launch argv");
	IS_STR(joined(&a), "/usr/bin/perf record -e intel_pt/pt=1,cyc=1,"
	    "pwr_evt=0,fup_on_ptw=0,mtc=1,tsc=1,noretcomp=0,ptw=0,branch=1,"
	    "mtc_period=0,cyc_thresh=1,psb_period=3,event=0,notnt=0/u "
	    "--filter filter 0x1040/0x2a@/usr/bin/x -m 16,1024 -Se --control "
	    "fifo:/tmp/s/ctl,/tmp/s/ack -o /tmp/s/perf.data -q -- /usr/bin/x "
	    "-n 3", "launch command");
	IS_INT(a.argc, 18, "18 arguments");
	OK(a.argv[a.argc] == NULL, "NULL-terminated");
	ptperf_argv_free(&a);
	OK(a.argv == NULL && a.argc == 0, "freed");

	o.program = NULL;
	o.pid = 4242;
	o.filter = NULL;
	o.per_thread = 1;
	IS_INT(ptperf_argv_build(&skylake, &o, &a, &e), 0, "attach argv");
	OK(strstr(joined(&a), " --per-thread -m 16,1024 -Se ") != NULL,
	    "per-thread");
	OK(strcmp(a.argv[a.argc - 2], "-p") == 0 &&
	    strcmp(a.argv[a.argc - 1], "4242") == 0, "ends with -p 4242");
	ptperf_argv_free(&a);

	o.program = prog;
	IS_INT(ptperf_argv_build(&skylake, &o, &a, &e), -ERR_INVALID,
	    "pid and program");
	IS_STR(e.msg, "perf record needs a pid or a program, not both",
	    "both message");
	OK(a.argv == NULL, "nothing left on failure");
	o.pid = 0;
	o.aux_bytes = 3 << 20;
	IS_INT(ptperf_argv_build(&skylake, &o, &a, &e), -ERR_INVALID,
	    "3 MiB is not a power of two");
	IS_STR(e.msg, "perf rings must be powers of two of at least one page "
	    "(AUX 3145728, data 65536 bytes)", "size message");
}

int
main(void)
{
	const char *src = getenv("PTKIT_SRC");
	char root[4200];
	struct error e;

	snprintf(root, sizeof(root), "%s/tests/fixtures/sysfs/skylake",
	    src != NULL ? src : ".");
	if (ptcaps_probe(&skylake, root, PTCAPS_NO_TOOLS, &e) < 0) {
		OK(0, "probe %s: %s", root, e.msg);
		return tap_done();
	}
	test_event();
	test_argv();
	return tap_done();
}
