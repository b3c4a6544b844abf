/*
 * mksnap: builds a snapshot for a fixture program without any recorder,
 * so the snapshot format can be tested on its own.
 *
 *   mksnap [-n] [-p PSB_BYTES] [-s | -w RING_BYTES] [-f FUNC] -o SNAPSHOT
 *          -e EXPECTED -- PROGRAM [ARG...]
 *
 * Runs PROGRAM under ptrace and single-steps every call of FUNC
 * (ptk_work) in every thread, classifying each executed instruction with
 * Zydis.  Each thread's path becomes a PT stream (tests/snap/ptenc, -n for
 * noretcomp, -p for periodic PSB+, -s to split each stream into two
 * AUXTRACE records at a packet boundary, -w to keep only the last
 * RING_BYTES as a wrapped ring would, from mid-packet, with the AUX
 * TRUNCATED flag and the branches the wrap lost dropped from EXPECTED),
 * and the snapshot is written
 * through lib/snapshot and lib/perfdata exactly as a recorder would:
 * images archived by build-id, MMAP2 in build-id form, COMM, ITRACE_START,
 * AUX, AUXTRACE, EXIT, TIME_CONV, manifest.json, output.log.  EXPECTED
 * receives the branches perf must decode (see ptenc.h).
 *
 * Test tool: it reports errors on stderr and exits 1; it is not a ptkit
 * command.
 */
#include <Zydis/Zydis.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fmt/perfdata.h"
#include "ptenc.h"
#include "fmt/snapshot.h"

#define TSC0 1000000000000ULL		/* first traced instruction */
#define SIDEBAND_LEAD 1000		/* sideband this much earlier */
#define MAX_THREADS 16
#define MAX_MAPS 64

struct thread {
	pid_t tid;
	char comm[32];
	struct ptenc *pe;
	uint64_t first_tsc, last_tsc;
	int runs;
};

struct map {
	uint64_t start, end, pgoff, ino;
	uint32_t maj, min;
	char path[PATH_MAX];
	struct snapshot_image img;
};

struct ctx {
	const char *func;
	struct ptenc_opts eo;
	int split;
	size_t ring;			/* -w: ring size that wrapped, or 0 */
	size_t ring_lines;		/* expected lines the wrap lost */
	char **argv;
	pid_t pid;
	int memfd;
	uint64_t bp_addr;
	long bp_orig;
	ZydisDecoder zd;
	struct thread threads[MAX_THREADS];
	int nr_threads;
	struct map maps[MAX_MAPS];
	int nr_maps;
	uint8_t vdso_buf[65536];
	size_t vdso_len;
	uint64_t vdso_start;
	struct snapshot_image vdso_img;
	uint64_t tsc;
	FILE *expected;
	int status;
	struct ptenc_step *steps;
	size_t cap_steps;
};

static void
die(const char *fmt, ...)
{
	va_list ap;

	fputs("mksnap: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Symbol value of name in the ELF file at path; *is_dyn for PIE. */
static uint64_t
elf_symbol(const char *path, const char *name, int *is_dyn)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	uint64_t val = 0;
	GElf_Ehdr eh;
	Elf *elf;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE ||
	    (elf = elf_begin(fd, ELF_C_READ, NULL)) == NULL ||
	    gelf_getehdr(elf, &eh) == NULL)
		die("%s: cannot read ELF", path);
	*is_dyn = eh.e_type == ET_DYN;
	while (val == 0 && (scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_SYMTAB ||
		    (d = elf_getdata(scn, NULL)) == NULL)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (gelf_getsym(d, (int)i, &sym) == NULL)
				continue;
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n != NULL && strcmp(n, name) == 0 &&
			    sym.st_value != 0) {
				val = sym.st_value;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	if (val == 0)
		die("%s: no symbol %s", path, name);
	return val;
}

static void
read_maps(struct ctx *c)
{
	char path[64], line[PATH_MAX + 256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", c->pid);
	if ((f = fopen(path, "r")) == NULL)
		die("%s: %s", path, strerror(errno));
	c->nr_maps = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long long start, end, off, ino;
		unsigned maj, min;
		char perms[8], name[PATH_MAX] = "";
		struct map *m;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095s", &start,
		    &end, perms, &off, &maj, &min, &ino, name) < 7)
			continue;
		if (strcmp(name, "[vdso]") == 0) {
			c->vdso_start = start;
			c->vdso_len = end - start;
		}
		if (perms[2] != 'x' || name[0] != '/')
			continue;
		if (c->nr_maps == MAX_MAPS)
			die("too many mappings");
		m = &c->maps[c->nr_maps++];
		m->start = start, m->end = end, m->pgoff = off, m->ino = ino;
		m->maj = maj, m->min = min;
		snprintf(m->path, sizeof(m->path), "%s", name);
	}
	fclose(f);
	if (c->vdso_len > sizeof(c->vdso_buf))
		die("vdso of %zu bytes", c->vdso_len);
	if (c->vdso_len > 0 && pread(c->memfd, c->vdso_buf, c->vdso_len,
	    (off_t)c->vdso_start) != (ssize_t)c->vdso_len)
		die("cannot read the vdso");
}

/* Load address of the executable's first mapping (for PIE). */
static uint64_t
exe_base(pid_t pid, const char *exe)
{
	char path[64], line[PATH_MAX + 256], real[PATH_MAX];
	uint64_t base = 0;
	FILE *f;

	if (realpath(exe, real) == NULL)
		die("%s: %s", exe, strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if ((f = fopen(path, "r")) == NULL)
		die("%s: %s", path, strerror(errno));
	while (base == 0 && fgets(line, sizeof(line), f) != NULL) {
		unsigned long long start, off;
		char name[PATH_MAX] = "";

		if (sscanf(line, "%llx-%*x %*s %llx %*x:%*x %*u %4095s", &start,
		    &off, name) == 3 && off == 0 && strcmp(name, real) == 0)
			base = start;
	}
	fclose(f);
	if (base == 0)
		die("%s not mapped in %d", real, pid);
	return base;
}

static struct thread *
thread_of(struct ctx *c, pid_t tid)
{
	char path[64];
	struct thread *t;
	FILE *f;

	for (int i = 0; i < c->nr_threads; i++)
		if (c->threads[i].tid == tid)
			return &c->threads[i];
	if (c->nr_threads == MAX_THREADS)
		die("too many threads");
	t = &c->threads[c->nr_threads++];
	t->tid = tid;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", c->pid, tid);
	if ((f = fopen(path, "r")) != NULL) {
		if (fgets(t->comm, sizeof(t->comm), f) != NULL)
			t->comm[strcspn(t->comm, "\n")] = '\0';
		fclose(f);
	}
	if (ptenc_new(&t->pe, &c->eo) < 0)
		die("out of memory");
	return t;
}

static void
classify(struct ctx *c, uint64_t ip, struct ptenc_step *s)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint8_t buf[16];
	ssize_t n = pread(c->memfd, buf, sizeof(buf), (off_t)ip);
	int far;

	if (n <= 0 || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&c->zd, buf,
	    (size_t)n, &in, ops)))
		die("cannot decode the instruction at %#" PRIx64, ip);
	s->ip = ip;
	s->len = in.length;
	far = in.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;
	switch (in.meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
		s->kind = PTENC_JCC;
		break;
	case ZYDIS_CATEGORY_UNCOND_BR:
		s->kind = far ? PTENC_FAR : ops[0].type ==
		    ZYDIS_OPERAND_TYPE_IMMEDIATE ? PTENC_JMP : PTENC_JMP_IND;
		break;
	case ZYDIS_CATEGORY_CALL:
		s->kind = far ? PTENC_FAR : ops[0].type ==
		    ZYDIS_OPERAND_TYPE_IMMEDIATE ? PTENC_CALL : PTENC_CALL_IND;
		break;
	case ZYDIS_CATEGORY_RET:
		s->kind = far || in.mnemonic != ZYDIS_MNEMONIC_RET ?
		    PTENC_FAR : PTENC_RET;
		break;
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_INTERRUPT:
		s->kind = PTENC_FAR;
		break;
	default:
		s->kind = PTENC_OTHER;
	}
}

static void
wait_stop(pid_t tid)
{
	int st;

	if (waitpid(tid, &st, __WALL) != tid)
		die("waitpid %d: %s", tid, strerror(errno));
	if (!WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP)
		die("thread %d: unexpected status %#x while stepping", tid, st);
}

/* Single-steps tid from FUNC's entry to its return; encodes the path. */
static void
trace_call(struct ctx *c, pid_t tid)
{
	struct thread *t = thread_of(c, tid);
	size_t n = 0;
	long depth = 0;
	char err[256];

	for (;;) {
		struct user_regs_struct regs;
		struct ptenc_step s;

		if (ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0)
			die("GETREGS: %s", strerror(errno));
		classify(c, regs.rip, &s);
		if (ptrace(PTRACE_SINGLESTEP, tid, 0, 0) < 0)
			die("SINGLESTEP: %s", strerror(errno));
		wait_stop(tid);
		if (ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0)
			die("GETREGS: %s", strerror(errno));
		s.next = regs.rip;
		if (s.kind == PTENC_OTHER && s.next == s.ip)
			continue;	/* one iteration of a rep string op */
		if (n == c->cap_steps) {
			c->cap_steps = c->cap_steps ? 2 * c->cap_steps : 4096;
			c->steps = realloc(c->steps,
			    c->cap_steps * sizeof(*c->steps));
			if (c->steps == NULL)
				die("out of memory");
		}
		c->steps[n++] = s;
		if (s.kind == PTENC_CALL || s.kind == PTENC_CALL_IND)
			depth++;
		else if (s.kind == PTENC_RET && depth-- == 0)
			break;
	}
	if (t->runs++ == 0)
		t->first_tsc = c->tsc;
	if (ptenc_run(t->pe, c->steps, n, &c->tsc, (uint32_t)tid, c->expected,
	    err, sizeof(err)) < 0)
		die("thread %d: %s", tid, err);
	t->last_tsc = c->tsc - 1;
	c->tsc += 1000;		/* untraced time between runs */
	fprintf(stderr, "mksnap: thread %d: %zu instructions\n", tid, n);
}

static void
set_breakpoint(struct ctx *c, pid_t tid, int on)
{
	long w = on ? (c->bp_orig & ~0xffL) | 0xcc : c->bp_orig;

	if (ptrace(PTRACE_POKETEXT, tid, (void *)c->bp_addr, (void *)w) < 0)
		die("POKETEXT: %s", strerror(errno));
}

static void
on_breakpoint(struct ctx *c, pid_t tid)
{
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0)
		die("GETREGS: %s", strerror(errno));
	if (regs.rip - 1 != c->bp_addr)
		die("thread %d: SIGTRAP at %#llx", tid, regs.rip);
	if (c->nr_maps == 0)
		read_maps(c);
	regs.rip = c->bp_addr;
	if (ptrace(PTRACE_SETREGS, tid, 0, &regs) < 0)
		die("SETREGS: %s", strerror(errno));
	set_breakpoint(c, tid, 0);
	trace_call(c, tid);
	set_breakpoint(c, tid, 1);
}

static void
launch(struct ctx *c, const char *log)
{
	char path[64];
	int st, is_dyn;
	uint64_t sym;

	c->pid = fork();
	if (c->pid < 0)
		die("fork: %s", strerror(errno));
	if (c->pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		execv(c->argv[0], c->argv);
		_exit(127);
	}
	if (waitpid(c->pid, &st, 0) != c->pid || !WIFSTOPPED(st))
		die("%s did not start", c->argv[0]);
	if (ptrace(PTRACE_SETOPTIONS, c->pid, 0,
	    PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL) < 0)
		die("SETOPTIONS: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d/mem", c->pid);
	if ((c->memfd = open(path, O_RDONLY)) < 0)
		die("%s: %s", path, strerror(errno));
	sym = elf_symbol(c->argv[0], c->func, &is_dyn);
	c->bp_addr = sym + (is_dyn ? exe_base(c->pid, c->argv[0]) : 0);
	errno = 0;
	c->bp_orig = ptrace(PTRACE_PEEKTEXT, c->pid, (void *)c->bp_addr, 0);
	if (errno != 0)
		die("PEEKTEXT %#" PRIx64 ": %s", c->bp_addr, strerror(errno));
	thread_of(c, c->pid);
	set_breakpoint(c, c->pid, 1);
}

/* Runs the program to its end, tracing every call of FUNC. */
static void
run(struct ctx *c)
{
	pid_t tid = c->pid;
	int sig = 0, st;

	for (;;) {
		if (tid > 0 && ptrace(PTRACE_CONT, tid, 0, sig) < 0 &&
		    errno != ESRCH)
			die("CONT %d: %s", tid, strerror(errno));
		sig = 0;
		tid = waitpid(-1, &st, __WALL);
		if (tid < 0)
			die("waitpid: %s", strerror(errno));
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (tid == c->pid) {
				c->status = st;
				return;
			}
			tid = 0;
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		if (WSTOPSIG(st) == SIGTRAP && (st >> 16) == 0)
			on_breakpoint(c, tid);
		else if (WSTOPSIG(st) == SIGTRAP || WSTOPSIG(st) == SIGSTOP)
			;	/* clone event or a new thread's first stop */
		else
			sig = WSTOPSIG(st);
	}
}

/* ---- snapshot ---------------------------------------------------- */

static void
check(int rc, const struct error *e)
{
	if (rc < 0)
		die("%s (%s)", e->msg, err_str(e->code));
}

static void
fill_manifest(struct ctx *c, struct snapshot *s,
    const struct perfdata_writer_config *cfg)
{
	struct manifest *m = &s->manifest;
	char buf[64], cwd[PATH_MAX];
	struct utsname u;
	struct error e;
	int argc = 0;

	error_clear(&e);
	uname(&u);
	check(manifest_set_string(&m->host.hostname, u.nodename, &e), &e);
	check(manifest_set_string(&m->host.kernel, u.release, &e), &e);
	check(manifest_set_string(&m->host.cpu_vendor, "GenuineIntel", &e), &e);
	check(manifest_set_string(&m->host.cpu_model_name,
	    "synthetic (tests/snap/mksnap)", &e), &e);
	m->host.cpu_family = 6;
	m->host.nr_cpus = (uint32_t)sysconf(_SC_NPROCESSORS_ONLN);
	m->host.emulated = 1;
	check(manifest_set_string(&m->recorder.backend, "synthetic", &e), &e);
	check(manifest_set_string(&m->recorder.version, PTKIT_VERSION, &e), &e);
	check(manifest_set_setting(m, "function", c->func, &e), &e);
	snprintf(buf, sizeof(buf), "%u", c->eo.psb_every);
	check(manifest_set_setting(m, "psb_every", buf, &e), &e);
	check(manifest_set_setting(m, "split", c->split ? "yes" : "no", &e), &e);
	m->pt.config = cfg->pt_config;
	m->pt.pmu_type = (uint32_t)cfg->pt.priv[PERFDATA_PT_PMU_TYPE];
	m->pt.branch = 1;
	m->pt.tsc = 1;
	m->pt.noretcomp = c->eo.noretcomp;
	check(manifest_set_string(&m->pt.clock, "virtual", &e), &e);
	check(manifest_set_string(&m->pt.timing_profile, "low", &e), &e);
	m->pt.tsc_hz = 1000000000;
	m->pt.nom_freq = 1;
	m->pt.time_shift = cfg->pt.priv[PERFDATA_PT_TIME_SHIFT];
	m->pt.time_mult = cfg->pt.priv[PERFDATA_PT_TIME_MULT];
	m->pt.time_zero = cfg->pt.priv[PERFDATA_PT_TIME_ZERO];
	while (c->argv[argc] != NULL)
		argc++;
	check(manifest_set_argv(m, (size_t)argc, (const char *const *)c->argv,
	    &e), &e);
	m->target.pid = (uint32_t)c->pid;
	if (getcwd(cwd, sizeof(cwd)) != NULL)
		check(manifest_set_string(&m->target.cwd, cwd, &e), &e);
	if (WIFEXITED(c->status)) {
		check(manifest_set_string(&m->target.state, "exited", &e), &e);
		m->target.exit_code = WEXITSTATUS(c->status);
	} else {
		check(manifest_set_string(&m->target.state, "signaled", &e), &e);
		m->target.signal = WTERMSIG(c->status);
	}
	check(manifest_set_string(&m->trigger.kind, "exit", &e), &e);
	m->trigger.fired_ns = c->tsc;
	m->capture.start_ns = TSC0 - SIDEBAND_LEAD;
	m->capture.end_ns = c->tsc;
	m->capture.start_tsc = TSC0 - SIDEBAND_LEAD;
	m->capture.end_tsc = c->tsc;
}

static void
archive_images(struct ctx *c, struct snapshot *s)
{
	struct error e;

	error_clear(&e);
	for (int i = 0; i < c->nr_maps; i++)
		check(snapshot_archive_file(s, c->maps[i].path, NULL,
		    &c->maps[i].img, &e), &e);
	if (c->vdso_len > 0)
		check(snapshot_archive_memory(s, "[vdso]", c->vdso_buf,
		    c->vdso_len, &c->vdso_img, &e), &e);
}

static void
write_sideband(struct ctx *c, struct perfdata_writer *w)
{
	uint64_t t = TSC0 - SIDEBAND_LEAD;
	struct error e;

	error_clear(&e);
	for (int i = 0; i < c->nr_threads; i++) {
		struct perfdata_comm cm = { .pid = (uint32_t)c->pid,
		    .tid = (uint32_t)c->threads[i].tid, .exec = i == 0,
		    .comm = c->threads[i].comm };

		cm.sid = (struct perfdata_sid){ cm.pid, cm.tid, t++,
		    PERFDATA_NO_CPU, 0 };
		check(perfdata_write_comm(w, &cm, &e), &e);
	}
	for (int i = 0; i < c->nr_maps; i++) {
		const struct map *mp = &c->maps[i];
		struct perfdata_mmap m = { .pid = (uint32_t)c->pid,
		    .tid = (uint32_t)c->pid, .addr = mp->start,
		    .len = mp->end - mp->start, .pgoff = mp->pgoff,
		    .prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE,
		    .filename = mp->path };

		m.sid = (struct perfdata_sid){ m.pid, m.tid, t++,
		    PERFDATA_NO_CPU, 0 };
		m.build_id_size = (uint8_t)mp->img.build_id_size;
		memcpy(m.build_id, mp->img.build_id, mp->img.build_id_size);
		if (m.build_id_size == 0) {
			m.maj = mp->maj, m.min = mp->min, m.ino = mp->ino;
		}
		check(perfdata_write_mmap2(w, &m, &e), &e);
	}
	if (c->vdso_len > 0) {
		struct perfdata_mmap m = { .pid = (uint32_t)c->pid,
		    .tid = (uint32_t)c->pid, .addr = c->vdso_start,
		    .len = c->vdso_len, .prot = PROT_READ | PROT_EXEC,
		    .flags = MAP_PRIVATE, .filename = "[vdso]" };

		m.sid = (struct perfdata_sid){ m.pid, m.tid, t++,
		    PERFDATA_NO_CPU, 0 };
		m.build_id_size = (uint8_t)c->vdso_img.build_id_size;
		memcpy(m.build_id, c->vdso_img.build_id, m.build_id_size);
		check(perfdata_write_mmap2(w, &m, &e), &e);
	}
	for (int i = 0; i < c->nr_threads; i++) {
		struct perfdata_itrace_start it = { .pid = (uint32_t)c->pid,
		    .tid = (uint32_t)c->threads[i].tid };

		it.sid = (struct perfdata_sid){ it.pid, it.tid, t++,
		    PERFDATA_NO_CPU, 0 };
		check(perfdata_write_itrace_start(w, &it, &e), &e);
	}
	check(perfdata_write_finished_round(w, &e), &e);
}

static void
write_trace(struct ctx *c, struct snapshot *s, struct perfdata_writer *w)
{
	struct error e;
	uint32_t idx = 0;

	error_clear(&e);
	for (int i = 0; i < c->nr_threads; i++) {
		struct thread *t = &c->threads[i];
		struct manifest_thread row = { .tid = (uint32_t)t->tid,
		    .pid = (uint32_t)c->pid, .name = t->comm };
		struct perfdata_auxtrace a = { .reference =
		    ptenc_last_tsc(t->pe), .idx = idx, .tid = (uint32_t)t->tid,
		    .cpu = PERFDATA_NO_CPU };
		struct perfdata_aux aux = { 0 };
		const uint8_t *data;
		size_t len, cut;

		if (t->runs == 0)
			continue;
		data = ptenc_data(t->pe, &len);
		if (c->ring > 0 && c->ring < len) {
			/* the ring kept its last c->ring bytes: from anywhere,
			 * even mid-packet; decoders sync at the next PSB */
			size_t psb;

			if (ptenc_psb_from(t->pe, len - c->ring, &psb,
			    &c->ring_lines) < 0)
				die("no PSB in the last %zu bytes", c->ring);
			data += len - c->ring;
			len = c->ring;
			row.wrapped = 1;
			aux.flags = PERFDATA_AUX_FLAG_TRUNCATED;
		}
		cut = c->split ? ptenc_boundary(t->pe, len / 2) : 0;
		if (cut > 0) {
			check(perfdata_write_auxtrace(w, &a, data, cut, &e), &e);
			a.offset = (cut + 7) / 8 * 8;
		}
		check(perfdata_write_auxtrace(w, &a, data + cut, len - cut, &e),
		    &e);
		aux.aux_size = len;
		aux.sid = (struct perfdata_sid){ (uint32_t)c->pid,
		    (uint32_t)t->tid, t->last_tsc + 1, PERFDATA_NO_CPU, 0 };
		check(perfdata_write_aux(w, &aux, &e), &e);
		row.auxtrace_idx = idx++;
		row.ring_size = c->ring ? c->ring : 1 << 20;
		row.bytes_kept = len;
		row.start_ns = t->first_tsc;
		row.end_ns = t->last_tsc;
		row.exited = 1;
		check(manifest_add_thread(&s->manifest, &row, &e), &e);
	}
	for (int i = c->nr_threads - 1; i >= 0; i--) {
		struct perfdata_task x = { .pid = (uint32_t)c->pid,
		    .ppid = (uint32_t)getpid(), .tid = (uint32_t)c->threads[i].tid,
		    .ptid = (uint32_t)c->pid, .time = c->tsc };

		x.sid = (struct perfdata_sid){ x.pid, x.tid, c->tsc,
		    PERFDATA_NO_CPU, 0 };
		check(perfdata_write_task(w, &x, &e), &e);
	}
	check(perfdata_write_finished_round(w, &e), &e);
}

static void
copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out;
	ssize_t n;

	if (in < 0)
		die("%s: %s", from, strerror(errno));
	if ((out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0)
		die("%s: %s", to, strerror(errno));
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			die("%s: %s", to, strerror(errno));
	close(in);
	close(out);
}

static void
write_snapshot(struct ctx *c, const char *dest, const char *log)
{
	struct perfdata_writer_config cfg;
	struct perfdata_time_conv tc = { .time_shift = 0, .time_mult = 1,
	    .time_zero = 0, .cap_user_time_zero = 1 };
	struct perfdata_writer *w;
	struct snapshot *s;
	struct utsname u;
	struct error e;

	error_clear(&e);
	perfdata_writer_config_default(&cfg, c->eo.noretcomp);
	uname(&u);
	cfg.host.hostname = u.nodename;
	cfg.host.osrelease = u.release;
	cfg.host.version = PTKIT_VERSION;
	cfg.host.arch = u.machine;
	cfg.host.nr_cpus_avail = cfg.host.nr_cpus_online = 1;
	check(snapshot_begin(&s, dest, &e), &e);
	archive_images(c, s);
	check(perfdata_writer_open(&w, snapshot_path(s, SNAPSHOT_PERF_DATA),
	    &cfg, &e), &e);
	check(perfdata_write_time_conv(w, &tc, &e), &e);
	check(perfdata_write_auxtrace_info(w, &e), &e);
	write_sideband(c, w);
	write_trace(c, s, w);
	for (size_t i = 0; i < s->manifest.nr_images; i++) {
		const struct manifest_image *im = &s->manifest.images[i];
		uint8_t id[SNAPSHOT_BUILD_ID_MAX];
		size_t n;

		if (im->build_id == NULL)
			continue;
		n = strlen(im->build_id) / 2;
		for (size_t j = 0; j < n; j++)
			sscanf(im->build_id + 2 * j, "%2hhx", &id[j]);
		check(perfdata_writer_add_build_id(w, -1, id, n, im->path, &e),
		    &e);
	}
	check(perfdata_writer_close(w, &e), &e);
	fill_manifest(c, s, &cfg);
	copy_file(log, snapshot_path(s, SNAPSHOT_OUTPUT_LOG));
	check(snapshot_commit(s, &e), &e);
}

/* Removes the first n lines of the file at path (what a wrap lost). */
static void
drop_lines(const char *path, size_t n)
{
	char tmp[PATH_MAX], line[512];
	FILE *in, *out;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((in = fopen(path, "r")) == NULL || (out = fopen(tmp, "w")) == NULL)
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), in) != NULL)
		if (n > 0 ? (n--, 0) : 1)
			fputs(line, out);
	fclose(in);
	if (fclose(out) != 0 || rename(tmp, path) < 0)
		die("%s: %s", path, strerror(errno));
}

static void
usage(void)
{
	fprintf(stderr, "usage: mksnap [-n] [-p PSB_BYTES] [-s | -w RING_BYTES] "
	    "[-f FUNC] -o SNAPSHOT -e EXPECTED -- PROGRAM [ARG...]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static struct ctx c;
	const char *dest = NULL, *exp = NULL;
	char log[PATH_MAX];
	int opt;

	c.func = "ptk_work";
	c.eo.tsc_every = 64;
	while ((opt = getopt(argc, argv, "np:sw:f:o:e:")) != -1) {
		switch (opt) {
		case 'n': c.eo.noretcomp = 1; break;
		case 'p': c.eo.psb_every = (unsigned)atoi(optarg); break;
		case 's': c.split = 1; break;
		case 'w': c.ring = (size_t)atol(optarg); break;
		case 'f': c.func = optarg; break;
		case 'o': dest = optarg; break;
		case 'e': exp = optarg; break;
		default: usage();
		}
	}
	if (dest == NULL || exp == NULL || optind >= argc ||
	    (c.ring > 0 && c.split))
		usage();
	c.argv = argv + optind;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&c.zd, ZYDIS_MACHINE_MODE_LONG_64,
	    ZYDIS_STACK_WIDTH_64)))
		die("ZydisDecoderInit failed");
	if ((c.expected = fopen(exp, "w")) == NULL)
		die("%s: %s", exp, strerror(errno));
	snprintf(log, sizeof(log), "%s.log", exp);
	c.tsc = TSC0;
	launch(&c, log);
	run(&c);
	if (fclose(c.expected) != 0)
		die("%s: %s", exp, strerror(errno));
	write_snapshot(&c, dest, log);
	if (c.ring > 0)
		drop_lines(exp, c.ring_lines);
	for (int i = 0; i < c.nr_threads; i++)
		ptenc_free(c.threads[i].pe);
	free(c.steps);
	return 0;
}
