/* verdict: see verdict.h. */
#include "verdict.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool/cli.h"
#include "rec_emu.h"
#include "tool/report.h"

static const char *const recorder_names[VERDICT_COUNT] = {
	"pt", "perf", "emu",
};

static void
problem(struct verdict *v, const char *remedy, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
problem(struct verdict *v, const char *remedy, const char *fmt, ...)
{
	struct verdict_problem *p;
	va_list ap;

	if (v->n_problems == VERDICT_MAX_PROBLEMS)
		return;
	p = &v->problems[v->n_problems++];
	va_start(ap, fmt);
	vsnprintf(p->what, sizeof(p->what), fmt, ap);
	va_end(ap);
	snprintf(p->remedy, sizeof(p->remedy), "%s", remedy);
}

const char *
assess_root(const struct rec_options *o)
{
	return o->sysroot != NULL ? o->sysroot : ptcaps_default_root();
}

static void
intel_pt_absent(const struct ptcaps *c, struct verdict *v)
{
	const struct ptcaps_cpu *cpu = &c->cpu;
	const char *emu = "use --recorder emu, which writes the same Intel PT "
	    "packets from a software CPU";

	if (cpu->vendor[0] != '\0' && strcmp(cpu->vendor, "GenuineIntel"))
		problem(v, "use --recorder emu, which writes the same Intel PT "
		    "packets from a software CPU, or record on an Intel "
		    "machine (Broadwell or newer)", "Intel PT is absent: this "
		    "CPU is %s (%s), and Intel PT exists only on Intel CPUs",
		    cpu->vendor, cpu->model_name[0] ? cpu->model_name : "?");
	else if (cpu->flag_intel_pt)
		problem(v, "use --recorder emu; dmesg says 'PT is enabled at "
		    "boot time' when the firmware took PT for itself",
		    "Intel PT is absent: the CPU has it (cpuinfo flag intel_pt) "
		    "but the kernel has no intel_pt PMU");
	else if (cpu->vendor[0] != '\0' && cpu->flag_hypervisor)
		problem(v, "use --recorder emu, or record on the host or in a "
		    "virtual machine with Intel PT passed through",
		    "Intel PT is absent: this virtual machine has no intel_pt "
		    "PMU");
	else if (cpu->vendor[0] != '\0')
		problem(v, "use --recorder emu, or record on a newer Intel "
		    "machine", "Intel PT is absent: this Intel CPU (family %d, "
		    "model %d) has no Intel PT, which arrived with Broadwell",
		    cpu->family, cpu->model);
	else
		problem(v, emu, "Intel PT is absent: no intel_pt PMU under "
		    "%s/sys/bus/event_source/devices", c->root);
}

/* CAP_PERFMON means something from kernel 5.8 on. */
static int
perfmon(const struct ptcaps *c)
{
	return ptcaps_has(c, PTCAPS_CAP_PERFMON) &&
	    ptcaps_kernel_at_least(c, 5, 8) != 0;
}

/* Problems pt and perf share: the PMU, permissions, rings, timing. */
static void
pmu_problems(const struct assessment *a, const struct rec_options *o,
    struct verdict *v)
{
	const struct ptcaps *c = &a->caps;
	const struct ptcaps_perm *pm = &c->perm;
	const char *hint;
	char what[VERDICT_TEXT_MAX];

	if (!c->pmu.present) {
		intel_pt_absent(c, v);
		return;
	}
	if (c->pmu.type < 0)
		problem(v, "use --recorder emu", "intel_pt has no type file");
	if (!pm->has_paranoid)
		problem(v, "use --recorder emu, or a kernel with perf events "
		    "(CONFIG_PERF_EVENTS)", "perf events are unavailable: no "
		    "/proc/sys/kernel/perf_event_paranoid");
	else if (pm->paranoid >= 3 && !perfmon(c) &&
	    !ptcaps_has(c, PTCAPS_CAP_SYS_ADMIN))
		problem(v, "sysctl kernel.perf_event_paranoid=2, or 'setcap "
		    "cap_perfmon+ep ptrec', or run as root",
		    "perf_event_paranoid is %d: unprivileged perf_event_open "
		    "is disabled", pm->paranoid);
	if (!a->plan_ok) {
		/* The message ends with the remedy; keep them apart. */
		snprintf(what, sizeof(what), "%s", a->plan_error.msg);
		hint = strstr(what, ptring_raise_hint);
		if (hint != NULL && hint >= what + 2) {
			what[hint - what - 2] = '\0';
			problem(v, ptring_raise_hint, "%s", what);
		} else {
			problem(v, "raise --budget-bytes", "%s", what);
		}
	}
	if (!a->filters_ok)
		problem(v, "use --recorder emu, whose filters have no such "
		    "limit, or fewer --filter options", "%s",
		    a->filters_error.msg);
	if (a->pt_probed && !a->pt_probe.ok)
		problem(v, a->pt_probe.remedy, "%s", a->pt_probe.what);
	if (o->trigger_symbol != NULL && a->probed && !a->bp_probe.ok)
		problem(v, a->bp_probe.remedy, "%s", a->bp_probe.what);
	if (!a->timing_ok)
		problem(v, "use --timing low, normal or high, which ptrec adapts "
		    "to the caps", "--timing %s: %s", o->timing == TIMING_CONFIG
		    ? "CONFIG" : ptconfig_profile_name((enum ptconfig_profile)
		    o->timing), a->timing_error.msg);
}

static void
judge_pt(const struct assessment *a, const struct rec_options *o,
    struct verdict *v)
{
	pmu_problems(a, o, v);
	if (a->caps.perm.ptrace_scope == 3)
		problem(v, "ptrace_scope 3 lasts until reboot; use --recorder "
		    "perf, which needs no ptrace", "ptrace_scope is 3: ptrace "
		    "is disabled, and the pt recorder gives each new thread its "
		    "event from a ptrace stop");
}

static void
judge_perf(const struct assessment *a, const struct rec_options *o,
    struct verdict *v)
{
	const struct ptcaps_tools *t = &a->caps.tools;

	pmu_problems(a, o, v);
	if (t->perf_path[0] == '\0')
		problem(v, "apt-get install linux-perf (Debian), or "
		    "linux-tools-$(uname -r) (Ubuntu)", "perf is not installed");
	else if (t->perf_major < 0)
		problem(v, "install the perf that matches the running kernel "
		    "(Debian: linux-perf)", "perf does not run: %s",
		    t->perf_problem);
	else if (t->perf_major < VERDICT_PERF_MIN_MAJOR ||
	    (t->perf_major == VERDICT_PERF_MIN_MAJOR &&
	    t->perf_minor < VERDICT_PERF_MIN_MINOR))
		problem(v, "install perf 5.10 or newer", "perf %s is older than "
		    "5.10, which added 'perf record --control fifo:'",
		    t->perf_version);
}

static void
judge_emu(const struct assessment *a, struct verdict *v)
{
	char why[VERDICT_TEXT_MAX];

	if (a->caps.tools.qemu_path[0] == '\0') {
		problem(v, "apt-get install qemu-user (make deps installs it)",
		    "qemu-x86_64 is not installed");
		return;
	}
	/* The plugin lives beside ptrec, never under a fake root. */
	if (a->caps.root[0] == '\0' && !rec_emu_available(why, sizeof(why)))
		problem(v, "build ptkit with make, which puts the plugin "
		    "beside ptrec, or set PTKIT_EMU_PLUGIN", "%s", why);
}

static void
judge(struct assessment *a, const struct rec_options *o)
{
	int i;

	for (i = 0; i < VERDICT_COUNT; i++)
		a->v[i].name = recorder_names[i];
	judge_pt(a, o, &a->v[VERDICT_PT]);
	judge_perf(a, o, &a->v[VERDICT_PERF]);
	judge_emu(a, &a->v[VERDICT_EMU]);
	for (i = 0; i < VERDICT_COUNT; i++)
		a->v[i].usable = a->v[i].n_problems == 0;
}

/*
 * Test opens tell what files cannot (EBUSY, seccomp, debug registers in
 * use), but only about this machine: never under a fake root.
 */
static void
live_probes(struct assessment *a)
{
	if (a->caps.root[0] != '\0')
		return;
	a->probed = 1;
	ptprobe_breakpoint(&a->bp_probe);
	if (a->caps.pmu.present && a->caps.pmu.type >= 0 && a->timing_ok) {
		a->pt_probed = 1;
		ptprobe_intel_pt(a->caps.pmu.type, a->timing.config,
		    &a->pt_probe);
	}
}

int
assess(const struct rec_options *o, struct assessment *a, struct error *e)
{
	enum ptconfig_profile p;
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = ptcaps_probe(&a->caps, assess_root(o), 0, e)) < 0)
		return rc;
	ptring_allowance(&a->caps, &a->allowance);
	if (a->caps.pmu.present) {
		a->plan_ok = ptring_plan(&a->caps, o->aux_bytes,
		    o->budget_bytes, &a->plan, &a->plan_error) == 0;
		p = o->timing == TIMING_CONFIG ? PTCONFIG_RAW :
		    (enum ptconfig_profile)o->timing;
		a->timing_ok = ptconfig_build(&a->caps, p, o->timing_config,
		    &a->timing, &a->timing_error) == 0;
		a->filters_ok = ptfilter_check_count(&a->caps, o->n_filters,
		    &a->filters_error) == 0;
	} else {
		a->plan_ok = a->timing_ok = a->filters_ok = 1;
	}
	a->aux_pause = ptcaps_kernel_at_least(&a->caps, 6, 13);
	live_probes(a);
	judge(a, o);
	return 0;
}

int
rec_hardware_check(const struct rec_options *o)
{
	struct assessment *a;
	const struct verdict *v;
	struct error e;
	char object[32];
	int i, rc = 0;

	if (o->recorder != REC_PT && o->recorder != REC_PERF)
		return 0;
	if ((a = malloc(sizeof(*a))) == NULL) {
		report(ptrec_tool.name, NULL, NULL, "out of memory");
		return -1;
	}
	if (assess(o, a, &e) < 0) {
		report_error(ptrec_tool.name, "--sysroot", &e, NULL);
		free(a);
		return -1;
	}
	v = &a->v[o->recorder == REC_PT ? VERDICT_PT : VERDICT_PERF];
	snprintf(object, sizeof(object), "--recorder %s", v->name);
	if (!v->usable) {
		for (i = 0; i < v->n_problems; i++)
			report(ptrec_tool.name, object, v->problems[i].remedy,
			    "%s", v->problems[i].what);
		rc = -1;
	}
	free(a);
	return rc;
}
