/* ptcaps: see ptcaps.h. */
#include "rec/ptcaps.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/numparse.h"
#include "base/progpath.h"
#include "base/spawn.h"

#define PT_DIR "sys/bus/event_source/devices/intel_pt"

static const char *const fmt_names[PTF_COUNT] = {
	"pt", "cyc", "pwr_evt", "fup_on_ptw", "mtc", "tsc", "noretcomp",
	"ptw", "branch", "mtc_period", "cyc_thresh", "psb_period", "event",
	"notnt",
};

static const char *const cap_names[PTC_COUNT] = {
	"psb_cyc", "mtc", "cycle_thresholds", "mtc_periods", "psb_periods",
	"ip_filtering", "num_address_ranges", "ptwrite", "power_event_trace",
	"event_trace", "tnt_disable", "topa_output", "topa_multiple_entries",
	"single_range_output", "output_subsys", "payloads_lip",
	"cr3_filtering", "max_subleaf",
};

const char *
ptcaps_fmt_name(enum ptcaps_fmt f)
{
	return (unsigned)f < PTF_COUNT ? fmt_names[f] : "?";
}

const char *
ptcaps_cap_name(enum ptcaps_cap c)
{
	return (unsigned)c < PTC_COUNT ? cap_names[c] : "?";
}

const char *
ptcaps_default_root(void)
{
	const char *r = getenv("PTKIT_SYSROOT");

	return r != NULL && *r != '\0' ? r : "/";
}

int
ptcaps_has(const struct ptcaps *c, int cap)
{
	return c->perm.has_capeff && cap >= 0 && cap < 64 &&
	    (c->perm.capeff >> cap & 1) != 0;
}

uint32_t
ptcaps_cap(const struct ptcaps_pmu *p, enum ptcaps_cap cap)
{
	return p->cap[cap].present ? p->cap[cap].value : 0;
}

/*
 * Reads root/rel into buf (NUL-terminated, at most size-1 bytes).
 * Returns the length, -ERR_NOTFOUND when the file does not exist (e is
 * left alone: absence is a fact, not an error), -ERR_IO otherwise.
 */
static int
read_text(const struct ptcaps *c, const char *rel, char *buf, size_t size,
    struct error *e)
{
	char path[PATH_MAX + 128];
	ssize_t n;
	size_t len = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", c->root, rel);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return -ERR_NOTFOUND;
		return error_set_errno(e, errno, "%s", path);
	}
	while (len + 1 < size &&
	    (n = read(fd, buf + len, size - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int err = errno;
			close(fd);
			return error_set_errno(e, err, "%s", path);
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (int)len;
}

/* Cuts trailing white space (sysfs files end in '\n'). */
static char *
chomp(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

static int
bad_file(const struct ptcaps *c, const char *rel, const char *text,
    const char *want, struct error *e)
{
	return error_set(e, ERR_FORMAT, "%s/%s: '%s' is not %s",
	    c->root, rel, text, want);
}

/*
 * Reads a one-number file.  base 10 or 16 (caps/ are printed with %x).
 * Returns 1 when read, 0 when absent, or a negative error.
 */
static int
read_number(const struct ptcaps *c, const char *rel, int base, int64_t min,
    int64_t max, int64_t *out, struct error *e)
{
	char buf[64], *end;
	long long v;
	int rc;

	if ((rc = read_text(c, rel, buf, sizeof(buf), e)) == -ERR_NOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	chomp(buf);
	errno = 0;
	v = strtoll(buf, &end, base);
	if (buf[0] == '\0' || *end != '\0' || errno != 0 || v < min ||
	    v > max)
		return bad_file(c, rel, buf, base == 16 ?
		    "a hexadecimal number" : "a number in range", e);
	*out = v;
	return 1;
}

int
ptcaps_parse_format(const char *text, struct ptcaps_field *f,
    struct error *e)
{
	unsigned lo, hi;
	int n = -1;

	if (sscanf(text, "config:%u-%u%n", &lo, &hi, &n) == 2 && n > 0) {
		/* a range */
	} else if (n = -1, sscanf(text, "config:%u%n", &lo, &n) == 1 &&
	    n > 0) {
		hi = lo;
	} else {
		n = -1;
	}
	while (n >= 0 && isspace((unsigned char)text[n]))
		n++;
	if (n < 0 || text[n] != '\0' || lo > hi || hi > 63)
		return error_set(e, ERR_FORMAT, "'%s' is not config:A or "
		    "config:A-B (bits 0 to 63)", text);
	f->present = 1;
	f->lo = lo;
	f->hi = hi;
	return 0;
}

int
ptcaps_parse_cpulist(const char *text, struct error *e)
{
	const char *s = text;
	unsigned long a, b;
	char *end;
	int count = 0;

	while (*s != '\0' && !isspace((unsigned char)*s)) {
		if (!isdigit((unsigned char)*s))
			goto bad;
		a = strtoul(s, &end, 10);
		b = a;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				goto bad;
			b = strtoul(end + 1, &end, 10);
		}
		if (b < a || b - a > 65535 || count > 65536)
			goto bad;
		count += (int)(b - a + 1);
		s = end;
		if (*s == ',')
			s++;
	}
	if (count == 0)
		goto bad;
	return count;
bad:
	return error_set(e, ERR_FORMAT, "'%s' is not a CPU list", text);
}

static int
read_formats(struct ptcaps *c, struct error *e)
{
	char rel[160], buf[64];
	int i, rc;

	for (i = 0; i < PTF_COUNT; i++) {
		snprintf(rel, sizeof(rel), PT_DIR "/format/%s", fmt_names[i]);
		rc = read_text(c, rel, buf, sizeof(buf), e);
		if (rc == -ERR_NOTFOUND)
			continue;
		if (rc < 0)
			return rc;
		if ((rc = ptcaps_parse_format(chomp(buf), &c->pmu.fmt[i],
		    e)) < 0)
			return error_prefix(e, "%s/%s", c->root, rel);
	}
	return 0;
}

static int
read_caps(struct ptcaps *c, struct error *e)
{
	char rel[160];
	int64_t v;
	int i, rc;

	for (i = 0; i < PTC_COUNT; i++) {
		snprintf(rel, sizeof(rel), PT_DIR "/caps/%s", cap_names[i]);
		rc = read_number(c, rel, 16, 0, UINT32_MAX, &v, e);
		if (rc < 0)
			return rc;
		c->pmu.cap[i].present = rc;
		c->pmu.cap[i].value = rc ? (uint32_t)v : 0;
	}
	return 0;
}

static int
read_tsc_art(struct ptcaps *c, struct error *e)
{
	char buf[64];
	unsigned num, den;
	int n = 0, rc;

	rc = read_text(c, PT_DIR "/tsc_art_ratio", buf, sizeof(buf), e);
	if (rc == -ERR_NOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	chomp(buf);
	if (sscanf(buf, "%u:%u%n", &num, &den, &n) != 2 || buf[n] != '\0')
		return bad_file(c, PT_DIR "/tsc_art_ratio", buf, "NUM:DEN", e);
	c->pmu.has_tsc_art_ratio = 1;
	c->pmu.tsc_art_num = num;
	c->pmu.tsc_art_den = den;
	return 0;
}

static int
read_pmu(struct ptcaps *c, struct error *e)
{
	char path[PATH_MAX + 64];
	struct stat st;
	int64_t v;
	int rc;

	c->pmu.type = c->pmu.nr_addr_filters = c->pmu.max_nonturbo_ratio = -1;
	snprintf(path, sizeof(path), "%s/" PT_DIR, c->root);
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	c->pmu.present = 1;
	if ((rc = read_number(c, PT_DIR "/type", 10, 0, INT32_MAX, &v, e)) < 0)
		return rc;
	if (rc)
		c->pmu.type = (int)v;
	if ((rc = read_number(c, PT_DIR "/nr_addr_filters", 10, 0, INT32_MAX,
	    &v, e)) < 0)
		return rc;
	if (rc)
		c->pmu.nr_addr_filters = (int)v;
	if ((rc = read_number(c, PT_DIR "/max_nonturbo_ratio", 10, 0,
	    INT32_MAX, &v, e)) < 0)
		return rc;
	if (rc)
		c->pmu.max_nonturbo_ratio = (int)v;
	if ((rc = read_formats(c, e)) < 0 || (rc = read_caps(c, e)) < 0)
		return rc;
	return read_tsc_art(c, e);
}

/* "key\t: value" lines of the first processor in /proc/cpuinfo. */
static void
cpuinfo_line(struct ptcaps_cpu *cpu, const char *key, const char *val)
{
	if (strcmp(key, "vendor_id") == 0)
		snprintf(cpu->vendor, sizeof(cpu->vendor), "%s", val);
	else if (strcmp(key, "model name") == 0)
		snprintf(cpu->model_name, sizeof(cpu->model_name), "%s", val);
	else if (strcmp(key, "cpu family") == 0)
		cpu->family = atoi(val);
	else if (strcmp(key, "model") == 0)
		cpu->model = atoi(val);
	else if (strcmp(key, "stepping") == 0)
		cpu->stepping = atoi(val);
	else if (strcmp(key, "flags") == 0) {
		char *copy = strdup(val), *save = NULL, *w;

		for (w = copy ? strtok_r(copy, " ", &save) : NULL; w != NULL;
		    w = strtok_r(NULL, " ", &save)) {
			cpu->flag_intel_pt |= strcmp(w, "intel_pt") == 0;
			cpu->flag_hypervisor |= strcmp(w, "hypervisor") == 0;
			cpu->flag_constant_tsc |= strcmp(w, "constant_tsc") == 0;
			cpu->flag_nonstop_tsc |= strcmp(w, "nonstop_tsc") == 0;
		}
		free(copy);
	}
}

static int
read_cpuinfo(struct ptcaps *c, struct error *e)
{
	char path[PATH_MAX + 32], *line = NULL, *colon, *val;
	size_t cap = 0;
	FILE *f;
	int seen = 0;

	c->cpu.family = c->cpu.model = c->cpu.stepping = -1;
	snprintf(path, sizeof(path), "%s/proc/cpuinfo", c->root);
	if ((f = fopen(path, "re")) == NULL)
		return errno == ENOENT ? 0 : error_set_errno(e, errno, "%s",
		    path);
	while (getline(&line, &cap, f) > 0) {
		chomp(line);
		if (line[0] == '\0' && seen)
			break;	/* the first processor is enough */
		if ((colon = strchr(line, ':')) == NULL)
			continue;
		seen = 1;
		val = colon + 1;
		while (*val == ' ')
			val++;
		*colon = '\0';
		cpuinfo_line(&c->cpu, chomp(line), val);
	}
	free(line);
	fclose(f);
	return 0;
}

static int
read_online(struct ptcaps *c, struct error *e)
{
	const char *rel = "sys/devices/system/cpu/online";
	char buf[512];
	int rc;

	if ((rc = read_text(c, rel, buf, sizeof(buf), e)) == -ERR_NOTFOUND) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		c->cpu.online = c->root[0] == '\0' && n > 0 ? (int)n : 0;
		return 0;
	}
	if (rc < 0)
		return rc;
	if ((rc = ptcaps_parse_cpulist(chomp(buf), e)) < 0)
		return error_prefix(e, "%s/%s", c->root, rel);
	c->cpu.online = rc;
	return 0;
}

/* CapEff (hex) and VmPin (kB) from proc/self/status. */
static int
read_status(struct ptcaps *c, struct error *e)
{
	char buf[8192], *p;
	int rc;

	if ((rc = read_text(c, "proc/self/status", buf, sizeof(buf), e)) ==
	    -ERR_NOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	if ((p = strstr(buf, "\nCapEff:")) != NULL) {
		char *end;

		p += strlen("\nCapEff:");
		c->perm.capeff = strtoull(p, &end, 16);
		if (end == p)
			return bad_file(c, "proc/self/status", "CapEff",
			    "followed by a hexadecimal mask", e);
		c->perm.has_capeff = 1;
	}
	if ((p = strstr(buf, "\nVmPin:")) != NULL)
		c->perm.vm_pin_kb = strtoull(p + strlen("\nVmPin:"), NULL, 10);
	return 0;
}

/* One number of proc/self/limits, "unlimited" as PTCAPS_UNLIMITED. */
static int
limit_value(const char *s, uint64_t *out)
{
	char *end;

	if (strncmp(s, "unlimited", 9) == 0) {
		*out = PTCAPS_UNLIMITED;
		return 9;
	}
	if (!isdigit((unsigned char)*s))
		return -1;
	*out = strtoull(s, &end, 10);
	return (int)(end - s);
}

static int
read_memlock(struct ptcaps *c, struct error *e)
{
	const char *key = "Max locked memory";
	char buf[4096], *p;
	int rc, n;

	if (c->root[0] == '\0') {
		struct rlimit rl;

		if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
			return error_set_errno(e, errno, "getrlimit");
		c->perm.memlock_soft = rl.rlim_cur == RLIM_INFINITY ?
		    PTCAPS_UNLIMITED : (uint64_t)rl.rlim_cur;
		c->perm.memlock_hard = rl.rlim_max == RLIM_INFINITY ?
		    PTCAPS_UNLIMITED : (uint64_t)rl.rlim_max;
		c->perm.has_memlock = 1;
		return 0;
	}
	if ((rc = read_text(c, "proc/self/limits", buf, sizeof(buf), e)) ==
	    -ERR_NOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	if ((p = strstr(buf, key)) == NULL)
		return 0;
	p += strlen(key);
	while (*p == ' ')
		p++;
	if ((n = limit_value(p, &c->perm.memlock_soft)) < 0)
		return bad_file(c, "proc/self/limits", key, "with limits", e);
	p += n;
	while (*p == ' ')
		p++;
	if (limit_value(p, &c->perm.memlock_hard) < 0)
		return bad_file(c, "proc/self/limits", key, "with limits", e);
	c->perm.has_memlock = 1;
	return 0;
}

int
ptcaps_kernel_at_least(const struct ptcaps *c, int major, int minor)
{
	if (c->kernel.major < 0)
		return -1;
	return c->kernel.major > major ||
	    (c->kernel.major == major && c->kernel.minor >= minor);
}

static int
read_kernel(struct ptcaps *c, struct error *e)
{
	const char *rel = "proc/sys/kernel/osrelease";
	char buf[64];
	int rc;

	c->kernel.major = c->kernel.minor = -1;
	if ((rc = read_text(c, rel, buf, sizeof(buf), e)) == -ERR_NOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	chomp(buf);
	if (sscanf(buf, "%d.%d", &c->kernel.major, &c->kernel.minor) != 2 ||
	    c->kernel.major < 0 || c->kernel.minor < 0) {
		c->kernel.major = c->kernel.minor = -1;
		return bad_file(c, rel, buf, "a kernel release (X.Y...)", e);
	}
	snprintf(c->kernel.release, sizeof(c->kernel.release), "%s", buf);
	return 0;
}

static int
read_perm(struct ptcaps *c, struct error *e)
{
	int64_t v;
	int rc;

	c->perm.ptrace_scope = -1;
	if ((rc = read_number(c, "proc/sys/kernel/perf_event_paranoid", 10,
	    INT32_MIN, INT32_MAX, &v, e)) < 0)
		return rc;
	c->perm.has_paranoid = rc;
	c->perm.paranoid = rc ? (int)v : 0;
	if ((rc = read_number(c, "proc/sys/kernel/perf_event_mlock_kb", 10,
	    0, INT32_MAX, &v, e)) < 0)
		return rc;
	c->perm.has_mlock_kb = rc;
	c->perm.mlock_kb = rc ? (uint64_t)v : 0;
	if ((rc = read_number(c, "proc/sys/kernel/yama/ptrace_scope", 10, 0,
	    3, &v, e)) < 0)
		return rc;
	if (rc)
		c->perm.ptrace_scope = (int)v;
	if ((rc = read_status(c, e)) < 0)
		return rc;
	return read_memlock(c, e);
}

/* "perf version 6.1.192" (Debian adds nothing; others add -suffixes). */
static void
read_perf_version(struct ptcaps_tools *t)
{
	char *argv[] = { t->perf_path, "--version", NULL };
	char *out = NULL, *v;
	size_t len;
	struct error e;
	int n = 0;

	error_clear(&e);
	if (spawn_capture(argv, &out, &len, &e) < 0) {
		snprintf(t->perf_problem, sizeof(t->perf_problem), "%.150s",
		    e.msg[0] ? e.msg : err_str(e.code));
	} else if (out == NULL ||
	    (v = strstr(out, "perf version ")) == NULL ||
	    sscanf(v + 13, "%d.%d%n", &t->perf_major, &t->perf_minor,
	    &n) != 2) {
		t->perf_major = t->perf_minor = -1;
		snprintf(t->perf_problem, sizeof(t->perf_problem),
		    "'%s --version' did not say 'perf version X.Y'",
		    t->perf_path);
	} else {
		snprintf(t->perf_version, sizeof(t->perf_version), "%.*s",
		    (int)strcspn(v + 13, " \n"), v + 13);
	}
	free(out);
}

static void
find_tools(struct ptcaps *c)
{
	struct ptcaps_tools *t = &c->tools;

	t->perf_major = t->perf_minor = -1;
	if (progpath_search("perf", c->root, t->perf_path,
	    sizeof(t->perf_path), NULL) == 0)
		read_perf_version(t);
	/* Not found leaves qemu_path "", which is how the doctor tells it. */
	PTKIT_DROP(progpath_search("qemu-x86_64", c->root, t->qemu_path,
	    sizeof(t->qemu_path), NULL));
}

int
ptcaps_probe(struct ptcaps *c, const char *root, unsigned flags,
    struct error *e)
{
	struct stat st;
	int rc;

	memset(c, 0, sizeof(*c));
	if (root == NULL || *root == '\0')
		root = "/";
	if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode))
		return error_set(e, ERR_NOTFOUND, "%s: not a directory", root);
	if (strlen(root) >= sizeof(c->root))
		return error_set(e, ERR_INVALID, "%s: path too long", root);
	snprintf(c->root, sizeof(c->root), "%s", root);
	while (c->root[0] != '\0' && c->root[strlen(c->root) - 1] == '/')
		c->root[strlen(c->root) - 1] = '\0';
	if ((rc = read_kernel(c, e)) < 0 ||
	    (rc = read_cpuinfo(c, e)) < 0 || (rc = read_online(c, e)) < 0 ||
	    (rc = read_pmu(c, e)) < 0 || (rc = read_perm(c, e)) < 0)
		return rc;
	if (!(flags & PTCAPS_NO_TOOLS))
		find_tools(c);
	return 0;
}
