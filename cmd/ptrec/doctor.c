/* doctor: see doctor.h. */
#include "doctor.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "tool/report.h"
#include "verdict.h"

/* Caps whose value is a bitmask of allowed values, shown in hex. */
static int
cap_is_mask(enum ptcaps_cap cap)
{
	return cap == PTC_MTC_PERIODS || cap == PTC_CYCLE_THRESHOLDS ||
	    cap == PTC_PSB_PERIODS;
}

static const char *
yes(int v)
{
	return v ? "yes" : "no";
}

/* What --pid may attach to, by Yama's rules and CAP_SYS_PTRACE. */
static const char *
attach_scope(const struct ptcaps *c)
{
	int sys_ptrace = ptcaps_has(c, PTCAPS_CAP_SYS_PTRACE);

	if (c->perm.ptrace_scope == 3)
		return "impossible: ptrace_scope is 3";
	if (sys_ptrace)
		return "any process (CAP_SYS_PTRACE)";
	if (c->perm.ptrace_scope == 2)
		return "needs CAP_SYS_PTRACE (ptrace_scope is 2)";
	if (c->perm.ptrace_scope == 1)
		return "only descendants of ptrec (ptrace_scope is 1): other "
		    "processes need CAP_SYS_PTRACE or ptrace_scope 0";
	return "processes of this user";
}

static void
size_str(uint64_t v, char *buf, size_t size)
{
	if (v == PTCAPS_UNLIMITED)
		snprintf(buf, size, "unlimited");
	else
		ptconfig_format_size(v, buf, size);
}

/* Text. */

static void
text_cpu(const struct ptcaps *c)
{
	const struct ptcaps_cpu *cpu = &c->cpu;

	printf("root: %s\n", c->root[0] ? c->root : "/");
	printf("cpu: %s family %d model %d stepping %d (%s), %d CPUs online%s\n",
	    cpu->vendor[0] ? cpu->vendor : "unknown", cpu->family, cpu->model,
	    cpu->stepping, cpu->model_name[0] ? cpu->model_name : "?",
	    cpu->online, cpu->flag_hypervisor ? ", in a virtual machine" : "");
	printf("tsc: constant_tsc %s, nonstop_tsc %s\n",
	    yes(cpu->flag_constant_tsc), yes(cpu->flag_nonstop_tsc));
	printf("kernel: %s\n", c->kernel.release[0] ? c->kernel.release :
	    "unknown");
}

static const char *
trigger_mechanism(const struct assessment *a)
{
	if (a->aux_pause < 0)
		return "unknown (kernel release unknown)";
	if (a->aux_pause)
		return "aux_pause (kernel 6.13 or newer): the trace ends "
		    "exactly at the trigger";
	return "the thread is parked until the snapshot is written (no "
	    "aux_pause before kernel 6.13)";
}

static void
text_probe(const char *name, int ran, const struct ptprobe *p)
{
	if (!ran)
		printf("probe %s: not run under --sysroot\n", name);
	else if (p->ok)
		printf("probe %s: ok\n", name);
	else
		printf("probe %s: failed: %s\n", name, p->what);
}

static void
text_probes(const struct assessment *a)
{
	printf("symbol trigger: %s\n", trigger_mechanism(a));
	text_probe("hardware breakpoint", a->probed, &a->bp_probe);
	if (a->caps.pmu.present)
		text_probe("intel_pt event", a->pt_probed, &a->pt_probe);
}

static void
text_timing_line(const struct ptcaps *c, enum ptconfig_profile p)
{
	struct ptconfig cfg;
	struct error e;
	int i;

	if (ptconfig_build(c, p, 0, &cfg, &e) < 0) {
		printf("timing %s: refused: %s\n", ptconfig_profile_name(p),
		    e.msg);
		return;
	}
	printf("timing %s: 0x%" PRIx64 "%s%s%s\n", ptconfig_profile_name(p),
	    cfg.config, cfg.used != p ? " (uses " : "",
	    cfg.used != p ? ptconfig_profile_name(cfg.used) : "",
	    cfg.used != p ? ")" : "");
	for (i = 0; i < cfg.n_notes; i++)
		printf("  note: %s\n", cfg.notes[i]);
}

static void
text_pmu(const struct assessment *a, const struct rec_options *o)
{
	const struct ptcaps *c = &a->caps;
	const struct ptcaps_pmu *p = &c->pmu;
	char avail[64] = "";
	struct ptconfig cfg;
	struct error e;
	int i;

	if (!p->present) {
		printf("intel_pt: absent: no %s/sys/bus/event_source/devices/"
		    "intel_pt\n", c->root);
		return;
	}
	printf("intel_pt: present, type %d\n", p->type);
	for (i = 0; i < PTC_COUNT; i++) {
		if (!p->cap[i].present)
			printf("caps/%s: absent\n", ptcaps_cap_name(i));
		else
			printf(cap_is_mask(i) ? "caps/%s: 0x%x\n" :
			    "caps/%s: %u\n", ptcaps_cap_name(i),
			    p->cap[i].value);
	}
	for (i = PTCONFIG_LOW; i <= PTCONFIG_HIGH; i++) {
		text_timing_line(c, i);
		if (ptconfig_build(c, i, 0, &cfg, &e) == 0 && cfg.used == (enum ptconfig_profile)i)
			snprintf(avail + strlen(avail), sizeof(avail) -
			    strlen(avail), "%s%s", avail[0] ? ", " : "",
			    ptconfig_profile_name(i));
	}
	printf("timing profiles available: %s\n", avail[0] ? avail : "none");
	if (o->timing == TIMING_CONFIG)
		printf("timing 0x%" PRIx64 ": %s%s\n", o->timing_config,
		    a->timing_ok ? "accepted" : "refused: ",
		    a->timing_ok ? "" : a->timing_error.msg);
	printf("address filters: %d\n", p->nr_addr_filters >= 0 ?
	    p->nr_addr_filters : (int)(ptcaps_cap(p, PTC_NUM_ADDRESS_RANGES) &
	    7));
}

static void
text_perm(const struct assessment *a)
{
	const struct ptcaps *c = &a->caps;
	const struct ptcaps_perm *pm = &c->perm;
	char s1[32], s2[32];

	if (pm->has_paranoid)
		printf("perf_event_paranoid: %d\n", pm->paranoid);
	else
		printf("perf_event_paranoid: absent\n");
	if (pm->has_capeff)
		printf("capabilities: CAP_PERFMON %s, CAP_SYS_ADMIN %s, "
		    "CAP_IPC_LOCK %s, CAP_SYS_PTRACE %s\n",
		    yes(ptcaps_has(c, PTCAPS_CAP_PERFMON)),
		    yes(ptcaps_has(c, PTCAPS_CAP_SYS_ADMIN)),
		    yes(ptcaps_has(c, PTCAPS_CAP_IPC_LOCK)),
		    yes(ptcaps_has(c, PTCAPS_CAP_SYS_PTRACE)));
	else
		printf("capabilities: unknown\n");
	if (pm->has_mlock_kb)
		printf("perf_event_mlock_kb: %" PRIu64 "\n", pm->mlock_kb);
	else
		printf("perf_event_mlock_kb: absent\n");
	size_str(pm->memlock_soft, s1, sizeof(s1));
	size_str(pm->memlock_hard, s2, sizeof(s2));
	if (pm->has_memlock)
		printf("RLIMIT_MEMLOCK: soft %s, hard %s\n", s1, s2);
	else
		printf("RLIMIT_MEMLOCK: unknown\n");
	if (a->allowance.unlimited) {
		printf("locked-memory allowance: unlimited (%s)\n",
		    a->allowance.why_unlimited);
	} else {
		ptconfig_format_size(a->allowance.bytes, s1, sizeof(s1));
		printf("locked-memory allowance: %s (other perf users of this "
		    "UID reduce it)\n", s1);
	}
	if (pm->ptrace_scope < 0)
		printf("ptrace_scope: absent (no Yama)\n");
	else
		printf("ptrace_scope: %d\n", pm->ptrace_scope);
	printf("attach (--pid): %s\n", attach_scope(c));
}

static void
text_rings(const struct assessment *a)
{
	char s1[32], s2[32];

	if (!a->caps.pmu.present)
		return;
	if (!a->plan_ok) {
		printf("ring budget: none: %s\n", a->plan_error.msg);
		return;
	}
	ptconfig_format_size(a->plan.aux_bytes, s1, sizeof(s1));
	ptconfig_format_size(a->plan.budget, s2, sizeof(s2));
	printf("ring budget: %s for all rings, %u thread%s at %s\n", s2,
	    a->plan.full_threads, a->plan.full_threads == 1 ? "" : "s", s1);
	if (a->plan.warning[0] != '\0')
		printf("  warning: %s\n", a->plan.warning);
}

static void
text_tools(const struct ptcaps *c)
{
	const struct ptcaps_tools *t = &c->tools;

	if (t->perf_path[0] == '\0')
		printf("perf: not installed\n");
	else if (t->perf_version[0] == '\0')
		printf("perf: %s, does not run: %s\n", t->perf_path,
		    t->perf_problem);
	else
		printf("perf: %s, version %s\n", t->perf_path, t->perf_version);
	printf("qemu-user: %s\n", t->qemu_path[0] ? t->qemu_path :
	    "not installed");
}

static void
text_verdicts(const struct assessment *a)
{
	char usable[32] = "";
	int i, j;

	for (i = 0; i < VERDICT_COUNT; i++) {
		const struct verdict *v = &a->v[i];

		if (v->usable) {
			printf("recorder %s: usable\n", v->name);
			snprintf(usable + strlen(usable), sizeof(usable) -
			    strlen(usable), "%s%s", usable[0] ? ", " : "",
			    v->name);
			continue;
		}
		printf("recorder %s: not usable\n", v->name);
		for (j = 0; j < v->n_problems; j++)
			printf("  problem: %s\n  remedy: %s\n",
			    v->problems[j].what, v->problems[j].remedy);
	}
	printf("usable recorders: %s\n", usable[0] ? usable : "none");
}

static void
doctor_text(const struct assessment *a, const struct rec_options *o)
{
	text_cpu(&a->caps);
	text_pmu(a, o);
	text_perm(a);
	text_rings(a);
	text_probes(a);
	text_tools(&a->caps);
	text_verdicts(a);
}

/* JSON. */

static void
json_int_or_null(struct jsonw *w, const char *key, int has, int64_t v)
{
	jsonw_key(w, key);
	if (has)
		jsonw_i64(w, v);
	else
		jsonw_null(w);
}

static void
json_size(struct jsonw *w, const char *key, int has, uint64_t v)
{
	jsonw_key(w, key);
	if (!has)
		jsonw_null(w);
	else if (v == PTCAPS_UNLIMITED)
		jsonw_string(w, "unlimited");
	else
		jsonw_u64(w, v);
}

static void
json_cpu(struct jsonw *w, const struct ptcaps *c)
{
	const struct ptcaps_cpu *cpu = &c->cpu;

	jsonw_key(w, "cpu");
	jsonw_object_begin(w);
	jsonw_kv_string(w, "vendor", cpu->vendor[0] ? cpu->vendor : NULL);
	jsonw_kv_string(w, "model_name", cpu->model_name[0] ? cpu->model_name
	    : NULL);
	json_int_or_null(w, "family", cpu->family >= 0, cpu->family);
	json_int_or_null(w, "model", cpu->model >= 0, cpu->model);
	json_int_or_null(w, "stepping", cpu->stepping >= 0, cpu->stepping);
	json_int_or_null(w, "online_cpus", cpu->online > 0, cpu->online);
	jsonw_kv_bool(w, "hypervisor", cpu->flag_hypervisor);
	jsonw_kv_bool(w, "intel_pt_flag", cpu->flag_intel_pt);
	jsonw_kv_bool(w, "constant_tsc", cpu->flag_constant_tsc);
	jsonw_kv_bool(w, "nonstop_tsc", cpu->flag_nonstop_tsc);
	jsonw_object_end(w);
}

static void
json_timing(struct jsonw *w, const struct ptcaps *c)
{
	struct ptconfig cfg;
	struct error e;
	char hex[24];
	int i, j;

	jsonw_key(w, "timing");
	jsonw_array_begin(w);
	for (i = PTCONFIG_LOW; i <= PTCONFIG_HIGH; i++) {
		int ok = ptconfig_build(c, i, 0, &cfg, &e) == 0;

		jsonw_object_begin(w);
		jsonw_kv_string(w, "profile", ptconfig_profile_name(i));
		jsonw_kv_bool(w, "available", ok && cfg.used == (enum ptconfig_profile)i);
		jsonw_kv_string(w, "uses", ok ? ptconfig_profile_name(cfg.used)
		    : NULL);
		snprintf(hex, sizeof(hex), "0x%" PRIx64, cfg.config);
		jsonw_kv_string(w, "config", ok ? hex : NULL);
		jsonw_key(w, "notes");
		jsonw_array_begin(w);
		if (!ok)
			jsonw_string(w, e.msg);
		for (j = 0; ok && j < cfg.n_notes; j++)
			jsonw_string(w, cfg.notes[j]);
		jsonw_array_end(w);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

static void
json_pmu(struct jsonw *w, const struct ptcaps *c)
{
	const struct ptcaps_pmu *p = &c->pmu;
	char buf[32];
	int i;

	jsonw_key(w, "intel_pt");
	jsonw_object_begin(w);
	jsonw_kv_bool(w, "present", p->present);
	json_int_or_null(w, "type", p->type >= 0, p->type);
	jsonw_key(w, "format");
	jsonw_object_begin(w);
	for (i = 0; i < PTF_COUNT; i++) {
		jsonw_key(w, ptcaps_fmt_name(i));
		if (!p->fmt[i].present) {
			jsonw_null(w);
			continue;
		}
		if (p->fmt[i].lo == p->fmt[i].hi)
			snprintf(buf, sizeof(buf), "config:%u", p->fmt[i].lo);
		else
			snprintf(buf, sizeof(buf), "config:%u-%u",
			    p->fmt[i].lo, p->fmt[i].hi);
		jsonw_string(w, buf);
	}
	jsonw_object_end(w);
	jsonw_key(w, "caps");
	jsonw_object_begin(w);
	for (i = 0; i < PTC_COUNT; i++)
		json_int_or_null(w, ptcaps_cap_name(i), p->cap[i].present,
		    p->cap[i].value);
	jsonw_object_end(w);
	json_int_or_null(w, "nr_addr_filters", p->nr_addr_filters >= 0,
	    p->nr_addr_filters);
	json_int_or_null(w, "max_nonturbo_ratio", p->max_nonturbo_ratio >= 0,
	    p->max_nonturbo_ratio);
	if (p->present)
		json_timing(w, c);
	jsonw_object_end(w);
}

static void
json_perm(struct jsonw *w, const struct assessment *a)
{
	const struct ptcaps *c = &a->caps;
	const struct ptcaps_perm *pm = &c->perm;

	jsonw_key(w, "permissions");
	jsonw_object_begin(w);
	json_int_or_null(w, "perf_event_paranoid", pm->has_paranoid,
	    pm->paranoid);
	json_int_or_null(w, "perf_event_mlock_kb", pm->has_mlock_kb,
	    (int64_t)pm->mlock_kb);
	json_size(w, "rlimit_memlock_soft", pm->has_memlock, pm->memlock_soft);
	json_size(w, "rlimit_memlock_hard", pm->has_memlock, pm->memlock_hard);
	jsonw_kv_bool(w, "cap_perfmon", ptcaps_has(c, PTCAPS_CAP_PERFMON));
	jsonw_kv_bool(w, "cap_sys_admin", ptcaps_has(c, PTCAPS_CAP_SYS_ADMIN));
	jsonw_kv_bool(w, "cap_ipc_lock", ptcaps_has(c, PTCAPS_CAP_IPC_LOCK));
	jsonw_kv_bool(w, "cap_sys_ptrace",
	    ptcaps_has(c, PTCAPS_CAP_SYS_PTRACE));
	json_int_or_null(w, "ptrace_scope", pm->ptrace_scope >= 0,
	    pm->ptrace_scope);
	jsonw_kv_string(w, "attach", attach_scope(c));
	jsonw_key(w, "mlock_allowance_bytes");
	if (a->allowance.unlimited)
		jsonw_string(w, "unlimited");
	else
		jsonw_u64(w, a->allowance.bytes);
	jsonw_object_end(w);
}

static void
json_rings(struct jsonw *w, const struct assessment *a)
{
	jsonw_key(w, "ring_budget");
	if (!a->caps.pmu.present) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	jsonw_kv_bool(w, "ok", a->plan_ok);
	jsonw_kv_u64(w, "budget_bytes", a->plan.budget);
	jsonw_kv_u64(w, "aux_bytes", a->plan.aux_bytes);
	jsonw_kv_u64(w, "sideband_bytes", a->plan.base_bytes);
	jsonw_kv_u64(w, "threads_at_full_size", a->plan.full_threads);
	jsonw_kv_string(w, "warning", a->plan_ok ? (a->plan.warning[0] ?
	    a->plan.warning : NULL) : a->plan_error.msg);
	jsonw_object_end(w);
}

static void
json_tools(struct jsonw *w, const struct ptcaps *c)
{
	const struct ptcaps_tools *t = &c->tools;

	jsonw_key(w, "tools");
	jsonw_object_begin(w);
	jsonw_key(w, "perf");
	if (t->perf_path[0] == '\0') {
		jsonw_null(w);
	} else {
		jsonw_object_begin(w);
		jsonw_kv_string(w, "path", t->perf_path);
		jsonw_kv_string(w, "version", t->perf_version[0] ?
		    t->perf_version : NULL);
		jsonw_kv_string(w, "problem", t->perf_problem[0] ?
		    t->perf_problem : NULL);
		jsonw_object_end(w);
	}
	jsonw_kv_string(w, "qemu_x86_64", t->qemu_path[0] ? t->qemu_path :
	    NULL);
	jsonw_object_end(w);
}

static void
json_probe(struct jsonw *w, const char *key, int ran, const struct ptprobe *p)
{
	jsonw_key(w, key);
	if (!ran) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	jsonw_kv_bool(w, "ok", p->ok);
	jsonw_kv_string(w, "what", p->ok ? NULL : p->what);
	jsonw_kv_string(w, "remedy", p->ok ? NULL : p->remedy);
	jsonw_object_end(w);
}

static void
json_kernel(struct jsonw *w, const struct assessment *a)
{
	const struct ptcaps *c = &a->caps;

	jsonw_key(w, "kernel");
	jsonw_object_begin(w);
	jsonw_kv_string(w, "release", c->kernel.release[0] ?
	    c->kernel.release : NULL);
	jsonw_key(w, "aux_pause");
	if (a->aux_pause < 0)
		jsonw_null(w);
	else
		jsonw_bool(w, a->aux_pause);
	jsonw_kv_string(w, "symbol_trigger", trigger_mechanism(a));
	jsonw_object_end(w);
	jsonw_key(w, "probes");
	jsonw_object_begin(w);
	json_probe(w, "breakpoint", a->probed, &a->bp_probe);
	json_probe(w, "intel_pt", a->pt_probed, &a->pt_probe);
	jsonw_object_end(w);
}

static void
json_verdicts(struct jsonw *w, const struct assessment *a)
{
	int i, j;

	jsonw_key(w, "recorders");
	jsonw_array_begin(w);
	for (i = 0; i < VERDICT_COUNT; i++) {
		const struct verdict *v = &a->v[i];

		jsonw_object_begin(w);
		jsonw_kv_string(w, "name", v->name);
		jsonw_kv_bool(w, "usable", v->usable);
		/*
		 * Kept for readers of the JSON: every recorder is built into
		 * ptrec, so the machine being ready is being usable.
		 */
		jsonw_kv_bool(w, "machine_ready", v->usable);
		jsonw_kv_bool(w, "built", 1);
		jsonw_key(w, "problems");
		jsonw_array_begin(w);
		for (j = 0; j < v->n_problems; j++) {
			jsonw_object_begin(w);
			jsonw_kv_string(w, "what", v->problems[j].what);
			jsonw_kv_string(w, "remedy", v->problems[j].remedy);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

static int
doctor_json(const struct assessment *a)
{
	struct jsonw w;

	jsonw_init(&w, stdout);
	jsonw_object_begin(&w);
	jsonw_kv_string(&w, "root", a->caps.root[0] ? a->caps.root : "/");
	json_cpu(&w, &a->caps);
	json_kernel(&w, a);
	json_pmu(&w, &a->caps);
	json_perm(&w, a);
	json_rings(&w, a);
	json_tools(&w, &a->caps);
	json_verdicts(&w, a);
	jsonw_object_end(&w);
	jsonw_newline(&w);
	return jsonw_finish(&w);
}

int
rec_doctor(const struct rec_options *o)
{
	struct assessment *a;
	struct error e;
	int i, status = EXIT_FAIL, rc;

	if ((a = malloc(sizeof(*a))) == NULL) {
		report(ptrec_tool.name, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	error_clear(&e);
	if ((rc = assess(o, a, &e)) < 0) {
		report_error(ptrec_tool.name, "--doctor", &e, NULL);
		free(a);
		return rc == -ERR_NOTFOUND ? EXIT_USAGE : EXIT_FAIL;
	}
	if (o->doctor_json) {
		if (doctor_json(a) < 0)
			report(ptrec_tool.name, "--doctor", NULL,
			    "could not write the JSON report");
	} else {
		doctor_text(a, o);
	}
	for (i = 0; i < VERDICT_COUNT; i++)
		if (a->v[i].usable)
			status = EXIT_OK;
	free(a);
	return status;
}
