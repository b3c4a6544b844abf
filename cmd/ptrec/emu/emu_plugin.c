/*
 * emu_plugin: the qemu glue of the emu recorder, loaded by qemu-x86_64 as
 *     -plugin libptkit-emu.so,dir=SCRATCH
 *
 * Owns the plugin's one global state (qemu's vCPU, syscall and exit
 * callbacks carry no userdata, DECISIONS.md allows this in one module):
 * the configuration ptrec wrote to SCRATCH/config, the translated-block
 * table, the per-thread slots (ring, tracer, ground truth), the sideband,
 * triggers and snapshots.  The files it leaves, and how ptrec reads them,
 * are described in ../emu_handoff.h.
 *
 * Threads: each guest thread is a host thread with its own vCPU, and only
 * that thread touches its slot, except while it is in a syscall, where a
 * snapshot may claim it (state SYSCALL -> DUMPING) to copy its ring; the
 * thread waits for the claim to end when it comes back.  vCPU indices are
 * reused after a thread exits, so slots are keyed by tid, found from the
 * index, and re-created when the index comes back with a new tid.
 *
 * Processes: a fork child inherits this state and the parent's shared
 * mappings of its rings and truth logs.  It notices at the fork's return
 * (getpid() is no longer g.pid), lets all of that go without writing to it,
 * and starts again as its own process: its own slots, rings, truth logs
 * and sideband (sideband.<pid>).  Only the first process (the leader)
 * takes snapshots and talks to ptrec; ptrec reads the other processes'
 * rings from their files (emu_handoff.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <regex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/clockns.h"
#include "elfsym.h"
#include "emu_cls.h"
#include "emu_enc.h"
#include "emu_exec.h"
#include "emu_handoff.h"
#include "emu_jit.h"
#include "emu_trace.h"
#include "qemu_api.h"

QEMU_API_EXPORT int qemu_plugin_version = QEMU_API_VERSION;

/*
 * The clock: one for every thread, the host's CLOCK_MONOTONIC in ns since
 * the origin (the plugin's start, or clock_origin from the config, so that
 * every process of a run shares it), offset by CLOCK_BASE so that images
 * mapped before the first instruction have a time before the first TSC
 * (perf needs that).  Reading it costs too much for every packet: a
 * thread reads it at each syscall's return and at its polls,
 * and counts one ns per instruction in between (see clock_sync).
 */
#define CLOCK_BASE 1000000ULL
#define MAX_VCPUS 4096
#define MAX_SLOTS 4096
#define MAX_IMAGES 1024
#define MAX_TRIGGERS 16
#define LINE_MAX_BYTES 4096

enum slot_state { S_RUN, S_SYSCALL, S_DUMPING, S_EXITED };
enum trig_kind { TRIG_SYMBOL = 1, TRIG_STOP = 2, TRIG_FILTER = 3 };

struct trigger {
	enum trig_kind kind;
	uint64_t off, size;		/* file offset and size in path */
	char path[PATH_MAX];
	uint64_t addr;			/* resolved virtual address, 0 if not */
};

struct linebuf {
	char buf[LINE_MAX_BYTES];
	size_t n;
};

/* What every block touches comes first, then the tracer. */
struct slot {
	int active;			/* tracing: has a ring, not stopped */
	uint64_t poll_at;		/* clock of the next slow-path check */
	struct emu_ring_hdr *hdr;
	struct emu_thread th;
	size_t map_len;
	struct emu_truth truth;
	int has_truth;
	int state;			/* enum slot_state, atomic */
	uint64_t snap_done;		/* last snapshot this ring went into,
					   claimed atomically (slot_dump) */
	uint64_t ended;			/* order it ended in (1, 2, ...); 0 while
					   it runs: see budget_make_room */
	int gave_back;			/* it gave history up for the budget */
	int tid;
	int64_t sys_num;
	uint64_t sys_args[6];
	int fds_lost;			/* ours to open again at the return */
	uint64_t line_out;		/* output offset just past the line that
					   asks for a snapshot, 0 none */
	uint64_t line_end;		/* and past the write holding it */
	struct linebuf out[2];		/* guest stdout/stderr, --trigger-line */
};

struct image {
	uint64_t start, end;
};

static struct {
	char dir[PATH_MAX];
	/* configuration */
	uint64_t aux, budget, psb;
	int cyc, retcomp, want_truth;
	int follow;			/* trace fork children */
	uint64_t after_ns, max_ns, min_ns, tail_ns, hits, repeat;
	struct trigger trig[MAX_TRIGGERS];
	int n_trig, n_filter;
	regex_t line_re;
	int has_line;

	pthread_mutex_t lock;
	struct emu_handlers handlers;
	struct image img[MAX_IMAGES];
	int n_img;
	struct emu_jit jit;		/* anonymous code, dumped at snapshots */
	struct slot *vcpu[MAX_VCPUS];
	uint64_t vcpu_clock[MAX_VCPUS];	/* start clock of the next thread */
	int vcpu_parent[MAX_VCPUS];
	struct slot *slots[MAX_SLOTS];
	int n_slots;
	uint64_t ends;			/* threads with a ring that ended */
	uint64_t untraced;		/* threads given no ring, for: */
	uint64_t untraced_budget;	/*   the budget full of live history */
	uint64_t untraced_slots;	/*   MAX_SLOTS rings already */
	uint64_t untraced_errors;	/*   a ring that could not be made */
	uint64_t trimmed;		/* ended threads that gave history up */
	uint64_t dropped;		/*   all of it */
	uint64_t dropped_bytes;		/* the bytes they gave up */
	int exiting;			/* the program ends: every thread does */

	volatile uint64_t snap_req;	/* newest snapshot asked for */
	int snap_pending;		/* rings still to copy */
	int snap_final;
	int snap_counts;		/* counts towards --repeat */
	char snap_reason[32];
	int snap_reason_tid;
	uint64_t snap_time;
	uint64_t snaps_done;
	volatile int off;		/* tracing has stopped for good */
	/*
	 * The program's first instruction (its first thread's clock), from
	 * which --after-ms, --max-capture-ms and --min-capture-ms count:
	 * the clock's origin is ptrec's start, before qemu even loaded, and
	 * on a busy machine qemu's start alone can outlast a deadline.
	 * UINT64_MAX until that thread starts; an exec'd program reads it
	 * from the scratch directory (START_FILE).
	 */
	uint64_t start_clock;
	uint64_t deadline;		/* --after-ms / --max-capture-ms */
	int deadline_is_max;
	uint64_t tail_deadline;		/* --tail-ms after a hit or a line */
	uint64_t origin;		/* CLOCK_MONOTONIC ns at clock 0 */
	uint64_t sync_clock;		/* newest clock at a syscall entry */
	pthread_t timer;		/* fires deadlines while all block */
	pthread_cond_t timer_cv;
	int timer_running, timer_stop;
	uint64_t hit_count;
	uint64_t forks;			/* children not traced */
	uint64_t sb_clock;		/* time of the newest mapping */
	uint64_t out_bytes;		/* written to fds 1 and 2, atomic, when
					   there is no control file */
	uint64_t snap_out;		/* output offset of the trigger */
	uint64_t snap_end;		/* output the snapshot keeps */

	int sb_fd, events_fd;
	int fd_floor;			/* our descriptors go at or above it */
	struct emu_control *ctl;	/* the leader's: ptrec's requests */
	struct emu_control *outc;	/* every process's: the output count */
	uint64_t ctl_seen;
	int pid;
	int leader;			/* the first process: snapshots are its */
	int exec_index;			/* programs this process ran before */
	int resume_ring;		/* the next ring of tid pid goes on */
	uint64_t image_clock;		/* time of the images qemu mapped:
					   before the program's first block */
	uint64_t exec_clock;		/* the exec's time (the shared clock
					   may run ahead of the host's) */
	int exit_group;
	int comm_done;
} g = { .lock = PTHREAD_MUTEX_INITIALIZER, .sb_fd = -1, .events_fd = -1,
    .tail_deadline = UINT64_MAX };

/* ---- our descriptors ---------------------------------------------------- */

/*
 * qemu-user gives the guest the process's own descriptor table, so the
 * files the plugin keeps open (its sideband, the events FIFO, the ground
 * truth) are numbers the program can close or reuse: a shell's
 * "exec 3>&1" would send our sideband into the program's output and
 * lose it.  They are kept high, away from the numbers programs pick,
 * and moved when the program closes or replaces one: natively the
 * program never had them (its close fails with EBADF there too, its
 * dup2 onto one just works).
 */
static int
fd_floor(void)
{
	struct rlimit rl;
	rlim_t top = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < top)
		top = rl.rlim_cur;
	return top > 128 ? (int)top - 64 : (int)top / 2;
}

/* fd moved to g.fd_floor or above (fd itself when it cannot be). */
static int
fd_high(int fd)
{
	int h;

	if (fd < 0 || fd >= g.fd_floor || g.fd_floor <= 3 ||
	    (h = fcntl(fd, F_DUPFD_CLOEXEC, g.fd_floor)) < 0)
		return fd;
	close(fd);
	return h;
}

/*
 * *fdp, one of ours, away from [lo, hi] before the program's syscall
 * closes or replaces what is there: above the range, else below it;
 * -1 when the range leaves no room (close_range of everything), for
 * fds_reopen to open again after the syscall.  Returns 1 when *fdp was
 * in the range.
 */
static int
fd_move_out(int *fdp, uint64_t lo, uint64_t hi)
{
	int fd = __atomic_load_n(fdp, __ATOMIC_ACQUIRE), h = -1;

	if (fd < 0 || (uint64_t)fd < lo || (uint64_t)fd > hi)
		return 0;
	if (hi < (uint64_t)INT_MAX - 1)
		h = fcntl(fd, F_DUPFD_CLOEXEC, (int)hi + 1);
	if (h < 0 && lo > 3 && (h = fcntl(fd, F_DUPFD_CLOEXEC, 3)) >= 0 &&
	    (uint64_t)h >= lo) {
		close(h);
		h = -1;
	}
	__atomic_store_n(fdp, h, __ATOMIC_RELEASE);
	close(fd);
	return 1;
}

/* s's ground truth file, open again after a close_range took it. */
static int
truth_fd_reopen(struct slot *s)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/truth.%d", g.dir, s->tid);
	s->truth.fd = fd_high(open(path, O_RDWR | O_CLOEXEC));
	return s->truth.fd;
}

/*
 * The program is about to close [lo, hi] (close, close_range) or put
 * another file at lo (dup2, dup3): ours there move first.  Returns
 * whether one could not and has to be opened again afterwards.
 */
static int
fds_guard(uint64_t lo, uint64_t hi)
{
	int lost = 0;

	if (fd_move_out(&g.sb_fd, lo, hi))
		lost |= g.sb_fd < 0;
	if (fd_move_out(&g.events_fd, lo, hi))
		lost |= g.events_fd < 0;
	pthread_mutex_lock(&g.lock);
	for (int i = 0; i < g.n_slots; i++) {
		struct slot *t = g.slots[i];

		if (t != NULL && t->has_truth &&
		    fd_move_out(&t->truth.fd, lo, hi))
			lost |= t->truth.fd < 0;
	}
	pthread_mutex_unlock(&g.lock);
	return lost;
}

static void open_sideband(void);

/* After a close_range that left ours no room: the files again, high. */
static void
fds_reopen(void)
{
	char path[PATH_MAX + 16];

	if (g.sb_fd < 0)
		open_sideband();
	if (g.leader && g.events_fd < 0) {
		snprintf(path, sizeof(path), "%s/events", g.dir);
		g.events_fd = fd_high(open(path, O_WRONLY | O_NONBLOCK |
		    O_CLOEXEC));
		if (g.events_fd >= 0)
			fcntl(g.events_fd, F_SETFL, 0);
	}
	pthread_mutex_lock(&g.lock);
	for (int i = 0; i < g.n_slots; i++)
		if (g.slots[i] != NULL && g.slots[i]->has_truth &&
		    g.slots[i]->truth.fd < 0)
			truth_fd_reopen(g.slots[i]);
	pthread_mutex_unlock(&g.lock);
}

static int
gettid_(void)
{
	return (int)syscall(SYS_gettid);
}

static void
say(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "ptrec: emu plugin: ");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	strncat(msg, "\n", sizeof(msg) - strlen(msg) - 1);
	qemu_plugin_outs(msg);
}

static void
write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* One sideband record, one write(2), so lines never interleave. */
static void
sideband(const char *fmt, ...)
{
	char line[PATH_MAX + 256];
	va_list ap;
	int n;

	if (g.sb_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	write_all(g.sb_fd, line, (size_t)n);
}

static void
event_line(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	if (g.events_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n > sizeof(line) - 2)
		return;
	line[n++] = '\n';
	write_all(g.events_fd, line, (size_t)n);
}

/* ---- images and trigger addresses ------------------------------------- */

static int
image_known(uint64_t va)
{
	int i;

	for (i = 0; i < g.n_img; i++)
		if (va >= g.img[i].start && va < g.img[i].end)
			return 1;
	return 0;
}

static void
image_add(uint64_t start, uint64_t end)
{
	if (g.n_img < MAX_IMAGES) {
		g.img[g.n_img].start = start;
		g.img[g.n_img].end = end;
		g.n_img++;
	}
}

/*
 * The stop indicators are functions of whichever image defines them: the
 * program, or a library it links or dlopens.  Each file mapped executable
 * is searched for them as it is mapped (g.lock held), and a definition not
 * known yet becomes a trigger there; readers of g.trig see it once
 * n_trig says so.
 */
static const char *const stop_indicator_names[] = {
	"ptkit_stop_indicator", "magic_trace_stop_indicator",
};

static void
find_stop_indicators(const char *path)
{
	uint64_t off = 0, size = 0;
	struct trigger *t;
	struct error e;
	size_t k;
	int i;

	for (k = 0; k < sizeof(stop_indicator_names) /
	    sizeof(stop_indicator_names[0]); k++) {
		if (elfsym_lookup(path, stop_indicator_names[k], &off, &size,
		    &e) < 0)
			continue;
		for (i = 0; i < g.n_trig; i++)
			if (g.trig[i].kind == TRIG_STOP &&
			    g.trig[i].off == off &&
			    strcmp(g.trig[i].path, path) == 0)
				break;
		if (i < g.n_trig)
			continue;
		if (g.n_trig == MAX_TRIGGERS) {
			say("%s: %s not armed: more than %d triggers", path,
			    stop_indicator_names[k], MAX_TRIGGERS);
			continue;
		}
		t = &g.trig[g.n_trig];
		memset(t, 0, sizeof(*t));
		t->kind = TRIG_STOP;
		t->off = off;
		snprintf(t->path, sizeof(t->path), "%s", path);
		__atomic_store_n(&g.n_trig, g.n_trig + 1, __ATOMIC_RELEASE);
	}
}

/* A file mapping appeared: resolve the triggers that live in it. */
static void
resolve_triggers(uint64_t start, uint64_t len, uint64_t pgoff,
    const char *path)
{
	struct trigger *t;
	int i;

	for (i = 0; i < g.n_trig; i++) {
		t = &g.trig[i];
		if (t->addr != 0 || strcmp(t->path, path) != 0)
			continue;
		if (t->off >= pgoff && t->off < pgoff + len)
			t->addr = start + (t->off - pgoff);
	}
}

/* The shared clock now. */
static uint64_t
host_now(void)
{
	uint64_t m = clock_ns(CLOCK_MONOTONIC);

	return CLOCK_BASE + (m > g.origin ? m - g.origin : 0);
}

static void
clock_max(uint64_t *p, uint64_t v)
{
	uint64_t seen = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (seen < v && !__atomic_compare_exchange_n(p, &seen, v, 0,
	    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/*
 * Brings s's clock up to the host clock, never back: at a syscall's
 * return and at polls.  Between these the thread counts one ns per
 * instruction, which may fall behind the host (emulated code is slower)
 * and, in code faster than that, run ahead of it; so at a return the clock
 * is also pulled past every thread's clock at its latest syscall entry
 * (published in sync_clock: whatever a thread learns through the kernel, a
 * lock handed over, a thread joined, happened after the sender's entry)
 * and past the newest mapping (its code may run in any thread, and perf
 * needs the mapping first).  Returns 1 when the clock moved.
 */
static int
clock_sync(struct slot *s, int at_return)
{
	uint64_t t = host_now(), m;

	if (at_return) {
		m = __atomic_load_n(&g.sync_clock, __ATOMIC_ACQUIRE) + 1;
		if (m > t)
			t = m;
	}
	m = __atomic_load_n(&g.sb_clock, __ATOMIC_RELAXED) + 1;
	if (m > t)
		t = m;
	if (s->th.clock >= t)
		return 0;
	s->th.clock = t;
	return 1;
}

static void
map_record(uint64_t time, int tid, uint64_t start, uint64_t len,
    uint64_t pgoff, unsigned prot, const char *path)
{
	clock_max(&g.sb_clock, time);
	sideband("map 0x%" PRIx64 " %d %d 0x%" PRIx64 " 0x%" PRIx64 " 0x%"
	    PRIx64 " 0x%x %s", time, g.pid, tid, start, len, pgoff, prot, path);
	if (path[0] == '/' && (prot & PROT_EXEC))
		find_stop_indicators(path);
	if (path[0] == '/')
		resolve_triggers(start, len, pgoff, path);
	if (prot & PROT_EXEC)
		image_add(start, start + len);
	if ((prot & PROT_EXEC) && strcmp(path, "//anon") == 0)
		emu_jit_add(&g.jit, start, len);
}

/*
 * qemu maps the program and ld.so itself, before any guest syscall: find
 * the mapping holding va in our own /proc/self/maps (guest addresses are
 * host addresses here, guest_base 0).  Host permissions differ from the
 * guest's, so the range is recorded as r-x: code ran there.
 */
static void
image_discover(uint64_t va, uint64_t time, int tid)
{
	char line[PATH_MAX + 128], path[PATH_MAX];
	uint64_t s, e, off;
	char perm[8];
	FILE *f;

	if (image_known(va) || (f = fopen("/proc/self/maps", "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		path[0] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64
		    " %*s %*s %4095[^\n]", &s, &e, perm, &off, path) < 4)
			continue;
		if (va < s || va >= e)
			continue;
		map_record(time, tid, s, e - s, off, PROT_READ | PROT_EXEC,
		    path[0] == '/' ? path : "//anon");
		break;
	}
	fclose(f);
	if (!image_known(va))
		image_add(va & ~0xfffULL, (va & ~0xfffULL) + 0x1000);
}

/* ---- translation --------------------------------------------------------- */

static uint8_t
in_filter(uint64_t va)
{
	int i;

	for (i = 0; i < g.n_trig; i++)
		if (g.trig[i].kind == TRIG_FILTER && g.trig[i].addr != 0 &&
		    va >= g.trig[i].addr && va < g.trig[i].addr + g.trig[i].size)
			return 1;
	return 0;
}

static uint8_t
trigger_at(uint64_t va)
{
	int i;

	for (i = 0; i < g.n_trig; i++)
		if (g.trig[i].addr == va && g.trig[i].kind != TRIG_FILTER)
			return (uint8_t)g.trig[i].kind;
	return 0;
}

/*
 * Whether qemu listed the instruction cut short: one after others that
 * crosses into the next page, which qemu 7.2 gives up translating (only
 * the bytes read before are listed) and does not run in this block; the
 * next block starts at it (emu.md 4.5).
 */
static int
insn_cut(struct qemu_plugin_insn *in)
{
	return emu_cls_classify(qemu_plugin_insn_data(in),
	    qemu_plugin_insn_size(in), qemu_plugin_insn_vaddr(in)).truncated;
}

static void
fill_last(struct emu_tb *t, struct qemu_plugin_insn *in, size_t idx)
{
	uint64_t va = qemu_plugin_insn_vaddr(in);
	size_t sz = qemu_plugin_insn_size(in);
	struct emu_insn_class c;

	c = emu_cls_classify(qemu_plugin_insn_data(in), sz, va);
	t->last_ip = va;
	t->end = va + sz;
	t->kind = (uint8_t)c.kind;
	t->target = c.target;
	t->call_next = (uint8_t)c.call_next;
	t->rep = (uint8_t)c.rep;
	/* A non-branch at a page end that qemu may have given up on with
	 * all its bytes read: phantom if the next block starts at this very
	 * instruction.  Not when the one after it was cut: qemu went on. */
	t->maybe_phantom = idx > 0 && !c.rep && !t->cut &&
	    c.kind == EMU_OTHER && (va & 0xfff) > 0xff0;
	if (c.truncated)
		t->kind = EMU_OTHER;
}

static void on_tb_exec(unsigned int vcpu, void *userdata);

/*
 * Block descriptions live in arenas, in translation order: blocks that
 * run together were mostly translated together, so this keeps the per-
 * block reads of the hot path on few cache lines (scattered callocs cost
 * a miss per block).  Never freed: qemu may run a block until it exits.
 * Called with g.lock held.
 */
#define TB_ARENA 65536

static struct emu_tb *
tb_alloc(void)
{
	static struct emu_tb *arena;
	static size_t used = TB_ARENA;

	if (used == TB_ARENA) {
		if ((arena = calloc(TB_ARENA, sizeof(*arena))) == NULL)
			return NULL;
		used = 0;
	}
	return &arena[used++];
}

static void
on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct emu_tb *t;

	(void)id;
	if (n == 0)
		return;
	pthread_mutex_lock(&g.lock);
	if ((t = tb_alloc()) == NULL) {
		pthread_mutex_unlock(&g.lock);
		return;
	}
	t->start = qemu_plugin_tb_vaddr(tb);
	/* The block is what runs: without a cut last instruction, so that
	 * its end, where a signal taken after it interrupts, is that
	 * instruction's start and not a byte inside it. */
	if (n > 1 && insn_cut(qemu_plugin_tb_get_insn(tb, n - 1))) {
		n--;
		t->cut = 1;
	}
	t->ninsn = (uint32_t)n;
	fill_last(t, qemu_plugin_tb_get_insn(tb, n - 1), n - 1);
	image_discover(t->start, g.image_clock, gettid_());
	t->trigger = trigger_at(t->start);
	t->in_filter = in_filter(t->start);
	pthread_mutex_unlock(&g.lock);
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec,
	    QEMU_PLUGIN_CB_NO_REGS, t);
}

/* ---- slots ---------------------------------------------------------------- */

/*
 * ring.<tid> mapped shared, of header and ring: made new (resume 0), or
 * the one the thread wrote before the process exec'd (resume 1: the new
 * program goes on in it, so that one thread has one ring; NULL when there
 * is none of our size, and a new one is made).
 */
static struct emu_ring_hdr *
ring_map(int tid, int resume, size_t *map_len)
{
	char path[PATH_MAX + 32];
	struct emu_ring_hdr *h;
	size_t len = EMU_HDR_SIZE + g.aux;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/ring.%d", g.dir, tid);
	fd = open(path, resume ? O_RDWR | O_CLOEXEC :
	    O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (resume ? fstat(fd, &st) < 0 || (uint64_t)st.st_size != len :
	    ftruncate(fd, (off_t)len) < 0) {
		close(fd);
		return NULL;
	}
	h = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (h == MAP_FAILED)
		return NULL;
	if (resume && (h->magic != EMU_RING_MAGIC || h->tid != tid ||
	    h->ring_size != g.aux)) {
		munmap(h, len);
		return NULL;
	}
	h->magic = EMU_RING_MAGIC;
	h->state = EMU_RING_LIVE;
	h->tid = tid;
	h->ring_size = g.aux;
	*map_len = len;
	return h;
}

/* ---- the ring budget ------------------------------------------------------ */

/*
 * A ring is a sparse file mapped shared, so it takes memory only as its
 * thread writes it: --budget-bytes counts the bytes the rings hold, not
 * the rings promised.  A new thread gets a ring while the rings together
 * hold less than the budget.  When they hold more as a thread starts,
 * threads that have ended give their history back, oldest first, until
 * they hold less: the one that ended first gives its oldest bytes first,
 * and all of them before the next one gives any.  Nothing is given back
 * before a new thread needs the room: the program may end first, and its
 * snapshot keep it all.  A snapshot keeps the newest history of every
 * thread (each ring overwrites its own oldest bytes for the same reason),
 * so what has been over longest is worth least; refusing the new threads
 * instead would lose the part nearest the trigger.  A running thread's
 * ring is never cut (only its own thread writes it), so threads are
 * refused only when running threads alone hold the budget, and the rings
 * may hold more than it by what running threads wrote since the last
 * thread started.  All of this is called with g.lock held.
 */
static uint64_t
ring_held(const struct slot *s)
{
	uint64_t total;

	if (s->hdr == NULL)
		return 0;
	total = __atomic_load_n(&s->hdr->total, __ATOMIC_ACQUIRE);
	return total - emu_ring_first(s->hdr, total);
}

static uint64_t
budget_held(void)
{
	uint64_t held = 0;
	int i;

	for (i = 0; i < g.n_slots; i++)
		held += ring_held(g.slots[i]);
	return held;
}

/* Gives the pages of stream bytes [from, to) back to the file system. */
static void
ring_punch(uint8_t *ring, uint64_t size, uint64_t from, uint64_t to)
{
	uint64_t a, b, n, page = 4096;

	while (from < to) {
		a = from % size;
		n = size - a < to - from ? size - a : to - from;
		b = a + n;
		from += n;
		/* whole pages only: a page's other bytes may still be kept */
		a = (a + page - 1) & ~(page - 1);
		b = b == size ? (b + page - 1) & ~(page - 1) : b & ~(page - 1);
		/* Without hole punching (a file system that lacks it) the
		 * pages stay until the scratch directory goes: the trace is
		 * given up all the same. */
		if (b > a)
			PTKIT_DROP(madvise(ring + a, b - a, MADV_REMOVE));
	}
}

/*
 * Ended thread s gives back its oldest bytes, at least want of them, all
 * of them when what would be left is too short to hold a PSB.  freed is
 * published before the pages go: a snapshot copying the ring meanwhile
 * sees it moved and keeps only what is still there.
 */
static void
ring_give_back(struct slot *s, uint64_t want)
{
	struct emu_ring_hdr *h = s->hdr;
	uint64_t total = h->total, from = emu_ring_first(h, total), to;

	to = want < total - from ? from + want : total;
	if (total - to < 2 * g.psb)
		to = total;
	__atomic_store_n(&h->freed, to, __ATOMIC_SEQ_CST);
	/* all of it: the pages it shared with older bytes go too */
	ring_punch((uint8_t *)h + EMU_HDR_SIZE, h->ring_size,
	    to == total ? 0 : from, to == total ? h->ring_size : to);
	g.dropped_bytes += to - from;
	g.trimmed += !s->gave_back;
	g.dropped += to == total;
	s->gave_back = 1;
}

static void
budget_counters(void)
{
	sideband("counter untraced_threads %" PRIu64, g.untraced);
	sideband("counter untraced_budget_full %" PRIu64, g.untraced_budget);
	sideband("counter untraced_slots_full %" PRIu64, g.untraced_slots);
	sideband("counter untraced_ring_errors %" PRIu64, g.untraced_errors);
	sideband("counter budget_trimmed_threads %" PRIu64, g.trimmed);
	sideband("counter budget_dropped_threads %" PRIu64, g.dropped);
	sideband("counter budget_dropped_bytes %" PRIu64, g.dropped_bytes);
}

/* Ended threads give history back until the rings hold at most limit;
 * returns what they hold then. */
static uint64_t
budget_make_room(uint64_t limit)
{
	uint64_t held = budget_held(), had = held, n;
	struct slot *oldest;
	int i;

	while (held > limit) {
		oldest = NULL;
		for (i = 0; i < g.n_slots; i++)
			if (g.slots[i]->ended != 0 &&
			    ring_held(g.slots[i]) > 0 && (oldest == NULL ||
			    g.slots[i]->ended < oldest->ended))
				oldest = g.slots[i];
		if (oldest == NULL)
			break;		/* running threads hold the rest */
		n = ring_held(oldest);
		ring_give_back(oldest, held - limit);
		held -= n - ring_held(oldest);
	}
	if (held != had)
		budget_counters();
	return held;
}

static void
comm_record(uint64_t time, int tid, const char *name)
{
	sideband("comm 0x%" PRIx64 " %d %d %.15s", time, g.pid, tid, name);
}

static void start_arm(uint64_t clock);

static struct slot *
slot_create(unsigned int vcpu)
{
	uint64_t clock = host_now();
	char path[PATH_MAX + 32];
	struct slot *s;
	const char *bin, *base;
	int resumed;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->tid = gettid_();
	/* After its parent's clone entry, whatever the host clock says. */
	if (g.vcpu_clock[vcpu] > clock)
		clock = g.vcpu_clock[vcpu];
	pthread_mutex_lock(&g.lock);
	/* The program's first thread: its time triggers start now. */
	if (g.start_clock == UINT64_MAX)
		start_arm(clock);
	/*
	 * Under the lock snapshot_request counts the slots by: a snapshot
	 * asked before this counts this ring out, so it must not go in.
	 */
	s->snap_done = g.snap_req;
	sideband("thread 0x%" PRIx64 " %d %d %d", clock - 1, g.pid, s->tid,
	    g.vcpu_parent[vcpu]);
	if (!g.comm_done) {
		g.comm_done = 1;
		bin = qemu_plugin_path_to_binary();
		base = bin != NULL && strrchr(bin, '/') ? strrchr(bin, '/') + 1 :
		    bin != NULL ? bin : "?";
		comm_record(clock - 1, s->tid, base);
		/* the program a process exec'd is followed: ptrec says so */
		if (g.exec_index > 0)
			sideband("program 0x%" PRIx64 " %d %d %d %s",
			    g.image_clock - 1, g.pid, s->tid, g.exec_index,
			    bin != NULL ? bin : "?");
	}
	/* After the last snapshot nothing is traced: no thread is lost. */
	if (g.off || g.n_slots == MAX_SLOTS ||
	    budget_make_room(g.budget - 1) >= g.budget) {
		if (!g.off) {
			g.untraced++;
			g.untraced_slots += g.n_slots == MAX_SLOTS;
			g.untraced_budget += g.n_slots < MAX_SLOTS;
			budget_counters();
		}
		pthread_mutex_unlock(&g.lock);
		s->state = S_EXITED;
		return s;
	}
	resumed = g.resume_ring && s->tid == g.pid;
	g.resume_ring = 0;
	s->hdr = resumed ? ring_map(s->tid, 1, &s->map_len) : NULL;
	if (s->hdr == NULL) {
		resumed = 0;
		s->hdr = ring_map(s->tid, 0, &s->map_len);
	}
	if (s->hdr == NULL || emu_enc_init(&s->th.enc, s->hdr, g.cyc,
	    g.retcomp, g.psb) < 0) {
		say("cannot create the ring of thread %d: %s", s->tid,
		    strerror(errno));
		g.untraced++;
		g.untraced_errors++;
		budget_counters();
		pthread_mutex_unlock(&g.lock);
		s->state = S_EXITED;
		s->hdr = NULL;
		return s;
	}
	if (resumed)
		emu_enc_resume(&s->th.enc);
	g.slots[g.n_slots++] = s;
	s->active = 1;
	pthread_mutex_unlock(&g.lock);
	if (g.want_truth) {
		snprintf(path, sizeof(path), "%s/truth.%d", g.dir, s->tid);
		s->has_truth = (resumed ? emu_truth_append(&s->truth, path) :
		    emu_truth_open(&s->truth, path)) == 0;
		if (s->has_truth)
			s->truth.fd = fd_high(s->truth.fd);
	}
	emu_thread_init(&s->th, s->tid, clock, &g.handlers,
	    s->has_truth ? &s->truth : NULL, g.n_filter > 0);
	s->poll_at = clock;
	return s;
}

static __attribute__((cold, noinline)) struct slot *
slot_of(unsigned int vcpu)
{
	struct slot *s;

	if (vcpu >= MAX_VCPUS)
		return NULL;
	s = g.vcpu[vcpu];
	if (s == NULL)
		g.vcpu[vcpu] = s = slot_create(vcpu);
	return s;
}

/* ---- snapshots ------------------------------------------------------------ */

static void write_file(const char *path, const uint8_t *p, uint64_t n);

/* The tracer's counts of what qemu 7.2 let it see only in part. */
static void
counters_record(void)
{
	struct emu_thread_stats sum;
	int i;

	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < g.n_slots; i++) {
		const struct emu_thread_stats *t = &g.slots[i]->th.st;

		sum.async += t->async;
		sum.defer += t->defer;
		sum.blind += t->blind;
		sum.phantom += t->phantom;
		sum.rep += t->rep;
		sum.unexpected += t->unexpected;
	}
	sideband("counter async_stops %" PRIu64, sum.async);
	sideband("counter signal_deferrals %" PRIu64, sum.defer);
	sideband("counter signal_blind_resolutions %" PRIu64, sum.blind);
	sideband("counter qemu_phantom_insns %" PRIu64, sum.phantom);
	sideband("counter rep_iterations %" PRIu64, sum.rep);
	budget_counters();
}

/*
 * The code that has no file, and the JIT map naming it, as they are now:
 * into snap.<seq>/ before its info file says the snapshot is complete.
 */
static void
snapshot_jit(uint64_t seq)
{
	char dir[PATH_MAX + 32], src[64], dst[PATH_MAX + 48];

	snprintf(dir, sizeof(dir), "%s/snap.%" PRIu64, g.dir, seq);
	emu_jit_dump(&g.jit, dir);
	emu_jit_map_path(g.pid, src, sizeof(src));
	snprintf(dst, sizeof(dst), "%s/perf.map", dir);
	emu_jit_copy(src, dst);
	sideband("counter jit_regions_lost %" PRIu64, g.jit.lost);
}

/* ---- the program's output -------------------------------------------- */

/*
 * The program's output count: the control file's, shared by every traced
 * process of the run, so that a child's output counts where output.log
 * has it; this process's own without one.
 */
static uint64_t *
out_counter(void)
{
	return g.outc != NULL ? (uint64_t *)&g.outc->out_bytes :
	    &g.out_bytes;
}

static uint64_t
out_written(void)
{
	return __atomic_load_n(out_counter(), __ATOMIC_RELAXED);
}

/*
 * Whether fd is where ptrec reads the program's output from: the file
 * its stdout or stderr was when it started, through whichever descriptor
 * (a dup, a shell's 3>&1), and not fd 1 once the program pointed it
 * elsewhere.  Without the control file's word, fds 1 and 2.
 */
static int
is_output(uint64_t fd)
{
	struct stat st;

	if (g.outc == NULL || (g.outc->out_ino[0] == 0 &&
	    g.outc->out_ino[1] == 0))
		return fd == 1 || fd == 2;
	if (fd > INT32_MAX || fstat((int)fd, &st) < 0)
		return 0;
	for (int i = 0; i < 2; i++)
		if (g.outc->out_ino[i] != 0 &&
		    (uint64_t)st.st_ino == g.outc->out_ino[i] &&
		    (uint64_t)st.st_dev == g.outc->out_dev[i])
			return 1;
	return 0;
}

static void
snapshot_complete(uint64_t seq)
{
	char path[PATH_MAX + 32], info[128];
	int n;

	snapshot_jit(seq);
	snprintf(path, sizeof(path), "%s/snap.%" PRIu64 "/info", g.dir, seq);
	n = snprintf(info, sizeof(info), "%s %d 0x%" PRIx64 " %" PRIu64
	    " %" PRIu64 "\n", g.snap_reason, g.snap_reason_tid, g.snap_time,
	    g.snap_out, g.snap_end);
	write_file(path, (const uint8_t *)info, (uint64_t)n);
	g.snaps_done += (uint64_t)g.snap_counts;
	counters_record();
	sideband("snapshot %" PRIu64 " %s %d 0x%" PRIx64, seq, g.snap_reason,
	    g.snap_reason_tid, g.snap_time);
	event_line("snapshot %" PRIu64 " %s", seq, g.snap_reason);
	if (g.snap_final) {
		g.off = 1;
		event_line("done");
	}
}

static void
write_file(const char *path, const uint8_t *p, uint64_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return;
	write_all(fd, (const char *)p, n);
	close(fd);
}

/* The ring's bytes from stream offset from to total, oldest first. */
static void
ring_write(int fd, const uint8_t *ring, uint64_t size, uint64_t total,
    uint64_t from)
{
	uint64_t pos[2], len[2];

	emu_ring_split(size, total, from, pos, len);
	write_all(fd, (const char *)ring + pos[0], len[0]);
	write_all(fd, (const char *)ring + pos[1], len[1]);
}

/*
 * Copies s's ring into snapshot seq; the caller owns s right now.  live:
 * the thread may trace again later; ip: the block it is about to run
 * (tracing stops there as at a hardware trigger), 0 when it is not in
 * guest code.  At the program's exit nothing writes a ring or gives
 * history back any more: the snapshot lists the bytes where they are,
 * in ring.<tid>, and ptrec copies them into perf.data from there once
 * qemu is gone (emu_handoff.h).
 */
static void
slot_dump(struct slot *s, uint64_t seq, int live, uint64_t ip)
{
	char path[PATH_MAX + 64], line[256];
	uint64_t kept, total, from, now, done;
	int fd, n, last, in_ring = g.exiting;

	if (s->hdr == NULL)
		return;
	/*
	 * Claimed before the copy, the one claim every copier takes: an
	 * exiting thread and a snapshot's asker may both come for a ring
	 * that has just been closed, and only the winner copies it and
	 * counts it done.  A snapshot starts only once the one before is
	 * copied whole, so snap_done only ever moves to the seq at hand.
	 */
	done = __atomic_load_n(&s->snap_done, __ATOMIC_SEQ_CST);
	if (done == seq || !__atomic_compare_exchange_n(&s->snap_done, &done,
	    seq, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	if (live) {
		if (ip != 0)
			emu_thread_stop(&s->th, ip);
		else
			emu_thread_flush(&s->th);
		s->hdr->cur_ip = 0;
		s->hdr->clock = s->th.clock;
		s->hdr->insns = s->th.insns;
		if (s->has_truth) {
			n = snprintf(line, sizeof(line), "snapshot %" PRIu64
			    "\n", seq);
			emu_truth_line(&s->truth, line, (size_t)n);
		}
	}
	total = s->hdr->total;
	from = emu_ring_first(s->hdr, total);
	snprintf(path, sizeof(path), "%s/snap.%" PRIu64 "/%d.pt", g.dir, seq,
	    s->tid);
	fd = in_ring ? -1 : open(path, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600);
	if (!in_ring && fd < 0)
		goto done;
	/*
	 * Straight from the ring into the file: a copy of a 32 MiB ring
	 * between costs as much as the write.  An ended thread may give
	 * history back while it is written: then the file is written again
	 * with only the bytes still there once it was done.
	 */
	while (!in_ring) {
		ring_write(fd, (uint8_t *)s->hdr + EMU_HDR_SIZE, g.aux, total,
		    from);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if ((now = emu_ring_first(s->hdr, total)) == from)
			break;
		from = now;
		if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
			close(fd);
			unlink(path);
			goto done;
		}
	}
	if (fd >= 0)
		close(fd);
	kept = total - from;
	/* A thread that gave all its history back is not in the snapshot. */
	if (kept == 0 && __atomic_load_n(&s->hdr->freed, __ATOMIC_ACQUIRE) !=
	    0) {
		if (!in_ring)
			unlink(path);
		goto done;
	}
	snprintf(path, sizeof(path), "%s/snap.%" PRIu64 "/threads", g.dir,
	    seq);
	n = snprintf(line, sizeof(line), "%d %" PRIu64 " %" PRIu64
	    " %d 0x%" PRIx64 " 0x%" PRIx64 " %" PRIu64 " %d %d\n", s->tid,
	    total, kept, total > g.aux, s->hdr->first_time,
	    s->hdr->clock, s->hdr->insns, !live || g.exiting, in_ring);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) {
		write_all(fd, line, (size_t)n);
		close(fd);
	}
done:
	pthread_mutex_lock(&g.lock);
	last = --g.snap_pending == 0;
	if (last)
		snapshot_complete(seq);
	pthread_mutex_unlock(&g.lock);
}

/* Waits until a claim on the caller's own slot is over, and takes it. */
static void
slot_reclaim(struct slot *s)
{
	int want = S_SYSCALL;

	while (!__atomic_compare_exchange_n(&s->state, &want, S_RUN, 0,
	    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		if (want != S_DUMPING)
			return;		/* already ours */
		want = S_SYSCALL;
		sched_yield();
	}
}

/*
 * Starts snapshot seq: every ring that is not running guest code right now
 * is copied here; running threads copy their own at their next block.
 */
static void
snapshot_request(struct slot *me, uint64_t me_ip, const char *reason,
    int final)
{
	uint64_t seq;
	struct slot *s;
	int i, n, want;

	if (!g.leader)
		return;		/* a child's rings are read from their files */
	pthread_mutex_lock(&g.lock);
	if (g.off || g.snap_pending > 0) {
		pthread_mutex_unlock(&g.lock);
		return;
	}
	seq = g.snap_req + 1;
	{
		char path[PATH_MAX + 32];

		snprintf(path, sizeof(path), "%s/snap.%" PRIu64, g.dir, seq);
		mkdir(path, 0700);
	}
	snprintf(g.snap_reason, sizeof(g.snap_reason), "%s", reason);
	g.snap_reason_tid = me != NULL ? me->tid : 0;
	g.snap_time = me != NULL ? me->th.clock : host_now();
	/* where in the program's output: past the matching line, or all
	 * it had written */
	g.snap_out = me != NULL && me->line_out != 0 ? me->line_out :
	    out_written();
	/* and what of it is the snapshot's: for a line, all of the write
	 * that holds it (the kernel takes the write whole) */
	g.snap_end = me != NULL && me->line_out != 0 ? me->line_end :
	    out_written();
	/* ptrec's requests (--control snapshot) do not use up --repeat */
	g.snap_counts = strcmp(reason, "request") != 0;
	g.snap_final = final || (g.snap_counts && g.snaps_done + 1 >= g.repeat);
	n = g.n_slots;			/* later slots are not in it */
	g.snap_pending = n + 1;		/* +1: ours, released below */
	__atomic_store_n(&g.snap_req, seq, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&g.lock);

	for (i = 0; i < n; i++) {
		s = g.slots[i];
		if (s == me)
			continue;
		want = S_SYSCALL;
		if (__atomic_load_n(&s->state, __ATOMIC_SEQ_CST) == S_EXITED) {
			slot_dump(s, seq, 0, 0);
		} else if (__atomic_compare_exchange_n(&s->state, &want,
		    S_DUMPING, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			slot_dump(s, seq, 1, 0);
			__atomic_store_n(&s->state, S_SYSCALL, __ATOMIC_SEQ_CST);
		}
	}
	if (me != NULL)
		slot_dump(me, seq, 1, me_ip);
	pthread_mutex_lock(&g.lock);
	if (--g.snap_pending == 0)
		snapshot_complete(seq);
	pthread_mutex_unlock(&g.lock);
}

/* ---- triggers -------------------------------------------------------------- */

static int
capture_started(const struct slot *s)
{
	return g.start_clock != UINT64_MAX &&
	    s->th.clock >= g.start_clock + g.min_ns;
}

static void tail_arm(struct slot *s);

static __attribute__((cold, noinline)) void
on_trigger(struct slot *s, const struct emu_tb *tb)
{
	if (tb->trigger == TRIG_STOP) {
		if (capture_started(s))
			snapshot_request(s, tb->start, "stop-indicator", 0);
		return;
	}
	/*
	 * vCPU threads hit the symbol at once: a plain ++ lost counts, and a
	 * reset to 0 could drop another thread's.  Each hit takes its own
	 * number, and the one that reaches g.hits (then 2 g.hits, ...) fires.
	 */
	if (!capture_started(s) ||
	    __atomic_add_fetch(&g.hit_count, 1, __ATOMIC_RELAXED) % g.hits != 0)
		return;
	if (g.tail_ns > 0)
		tail_arm(s);
	else
		snapshot_request(s, tb->start, "symbol", 0);
}

/*
 * Fires the deadline that has passed, if one has (under the lock: the
 * timer thread and the running threads race for it).  me: the thread
 * that saw it, about to run the block at ip; NULL for the timer thread.
 */
static void
deadline_fire(struct slot *me, uint64_t ip)
{
	uint64_t now = me != NULL ? me->th.clock : host_now();
	const char *reason = NULL;
	int final = 0;

	pthread_mutex_lock(&g.lock);
	if (now >= g.tail_deadline) {
		g.tail_deadline = UINT64_MAX;
		reason = "tail";
	} else if (now >= g.deadline && g.deadline_is_max) {
		g.deadline = UINT64_MAX;
		reason = "max-capture";
		final = 1;
	} else if (now >= g.deadline) {
		/* --after-ms: and again each period for --repeat */
		g.deadline = g.after_ns > 0 ? now + g.after_ns : UINT64_MAX;
		if (g.max_ns > 0 && g.deadline > g.start_clock + g.max_ns) {
			g.deadline = g.start_clock + g.max_ns;
			g.deadline_is_max = 1;
		}
		reason = "after-ms";
	}
	pthread_mutex_unlock(&g.lock);
	if (reason != NULL)
		snapshot_request(me, ip, reason, final);
}

/*
 * The timer: sleeps until the next deadline and fires it, so that time
 * triggers fire while every thread is blocked (a running thread fires
 * them itself at its poll, exactly at a block).  It takes no signals:
 * they are the guest's, which qemu handles in vCPU threads.
 */
static void *
timer_main(void *arg)
{
	uint64_t now, next, at;
	struct timespec ts;

	(void)arg;
	pthread_mutex_lock(&g.lock);
	while (!g.timer_stop && !g.off) {
		now = host_now();
		next = g.deadline < g.tail_deadline ? g.deadline :
		    g.tail_deadline;
		/*
		 * Before the program's first thread exists (qemu still
		 * loading it) there is no ring to snapshot: the first thread
		 * fires the deadline at its first block instead.
		 */
		if (now >= next && g.n_slots == 0)
			next = now + 1000000ULL;
		else if (now >= next) {
			pthread_mutex_unlock(&g.lock);
			deadline_fire(NULL, 0);
			pthread_mutex_lock(&g.lock);
			continue;
		}
		/* At least once a second: a deadline may move meanwhile. */
		at = next - now < 1000000000ULL ? next - now : 1000000000ULL;
		at += clock_ns(CLOCK_MONOTONIC);
		ts.tv_sec = (time_t)(at / 1000000000ULL);
		ts.tv_nsec = (long)(at % 1000000000ULL);
		pthread_cond_timedwait(&g.timer_cv, &g.lock, &ts);
	}
	pthread_mutex_unlock(&g.lock);
	return NULL;
}

static void
fork_prepare(void)
{
	pthread_mutex_lock(&g.lock);
}

static void
fork_parent(void)
{
	pthread_mutex_unlock(&g.lock);
}

static void
fork_child(void)
{
	g.timer_running = 0;
	pthread_mutex_unlock(&g.lock);
}

static void
timer_start(void)
{
	pthread_condattr_t ca;
	sigset_t all, old;

	if (pthread_condattr_init(&ca) != 0)
		return;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&g.timer_cv, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		return;
	}
	pthread_condattr_destroy(&ca);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	g.timer_running = pthread_create(&g.timer, NULL, timer_main,
	    NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!g.timer_running) {
		say("no timer thread: time triggers fire only while a thread "
		    "runs");
		return;
	}
	/* A fork child has no timer, and must not inherit the lock held. */
	if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
		say("no fork handlers: a child may hang on the timer's lock");
}

/* Wakes the timer to look at the deadlines again; g.lock held. */
static void
timer_kick(void)
{
	if (g.timer_running)
		pthread_cond_signal(&g.timer_cv);
}

static void
timer_end(void)
{
	if (!g.timer_running)
		return;
	pthread_mutex_lock(&g.lock);
	g.timer_stop = 1;
	timer_kick();
	pthread_mutex_unlock(&g.lock);
	pthread_join(g.timer, NULL);
	g.timer_running = 0;
}

/* --tail-ms: the snapshot comes that long after the hit (or line). */
static void
tail_arm(struct slot *s)
{
	pthread_mutex_lock(&g.lock);
	if (g.tail_deadline == UINT64_MAX) {
		g.tail_deadline = s->th.clock + g.tail_ns;
		timer_kick();
	}
	pthread_mutex_unlock(&g.lock);
	if (g.tail_deadline < s->poll_at)
		s->poll_at = g.tail_deadline;
}

static void
on_control(struct slot *s, uint64_t ip)
{
	uint64_t req = g.ctl->request_seq;

	g.ctl_seen = req;
	snapshot_request(s, ip, "request", g.ctl->stop != 0);
}

/* ---- execution ---------------------------------------------------------- */

/*
 * Everything a block need not check: snapshots asked by other threads or
 * by ptrec, the time triggers, the end of tracing.  Runs when the clock
 * reaches poll_at, at least every POLL_INSNS instructions and exactly at
 * a deadline, so time triggers stay exact and the common block pays one
 * comparison.
 */
#define POLL_INSNS 65536

static __attribute__((cold, noinline)) void
slot_poll(struct slot *s, const struct emu_tb *tb)
{
	uint64_t next;

	if (clock_sync(s, 0) && s->th.enabled)
		emu_enc_tsc(&s->th.enc, s->th.clock);
	s->hdr->clock = s->th.clock;
	s->hdr->insns = s->th.insns;
	if (!g.off && s->snap_done != g.snap_req)
		slot_dump(s, g.snap_req, 1, tb->start);
	if (!g.off && (s->th.clock >= g.deadline ||
	    s->th.clock >= g.tail_deadline))
		deadline_fire(s, tb->start);
	if (!g.off && g.ctl != NULL && g.ctl->request_seq != g.ctl_seen)
		on_control(s, tb->start);
	if (g.off) {
		s->active = 0;
		return;
	}
	next = s->th.clock + POLL_INSNS;
	if (g.deadline < next)
		next = g.deadline;
	if (g.tail_deadline < next)
		next = g.tail_deadline;
	s->poll_at = next;
}

/* Every block: what it calls rarely (slot_of, on_trigger, slot_poll) is
 * cold, out of line, so that this keeps a small frame. */
static void
on_tb_exec(unsigned int vcpu, void *userdata)
{
	const struct emu_tb *tb = userdata;
	struct slot *s = vcpu < MAX_VCPUS ? g.vcpu[vcpu] : NULL;

	if (__builtin_expect(s == NULL, 0) && (s = slot_of(vcpu)) == NULL)
		return;
	if (!s->active)
		return;
	emu_thread_tb(&s->th, tb);
	if (__builtin_expect(tb->trigger != 0, 0)) {
		on_trigger(s, tb);
	}
	if (__builtin_expect(s->th.clock >= s->poll_at, 0))
		slot_poll(s, tb);
	emu_enc_commit(&s->th.enc);
	s->hdr->cur_ip = tb->start;
}

/* ---- syscalls ---------------------------------------------------------- */


enum {
	NR_WRITE = 1, NR_WRITEV = 20, NR_PWRITE64 = 18, NR_PWRITEV = 296,
	NR_PWRITEV2 = 328, NR_SENDFILE = 40, NR_MMAP = 9, NR_MPROTECT = 10, NR_MUNMAP = 11,
	NR_RT_SIGACTION = 13, NR_CLONE = 56, NR_FORK = 57, NR_VFORK = 58,
	NR_EXECVE = 59, NR_EXIT = 60, NR_UNLINK = 87, NR_PRCTL = 157,
	NR_EXIT_GROUP = 231, NR_UNLINKAT = 263, NR_EXECVEAT = 322,
	NR_CLONE3 = 435, NR_CLOSE = 3, NR_DUP2 = 33, NR_DUP3 = 292,
	NR_CLOSE_RANGE = 436,
};

/*
 * A program that removes its JIT map before it exits would leave ptrec
 * nothing to archive: keep a copy of it as it was just before.
 */
static void
note_unlink(uint64_t path_addr)
{
	char map[64], dst[PATH_MAX + 32];

	if (!emu_jit_is_map_path(g.pid, path_addr))
		return;
	emu_jit_map_path(g.pid, map, sizeof(map));
	snprintf(dst, sizeof(dst), "%s/perf-map.removed", g.dir);
	emu_jit_copy(map, dst);
}

static void
note_handler(uint64_t act)
{
	uint64_t h;
	int i, n;

	if (act == 0)
		return;
	h = *(const uint64_t *)(uintptr_t)act;	/* sa_handler, guest_base 0 */
	if (h <= 1)
		return;				/* SIG_DFL, SIG_IGN */
	pthread_mutex_lock(&g.lock);
	n = g.handlers.n;
	for (i = 0; i < n && g.handlers.addr[i] != h; i++)
		;
	if (i == n && n < EMU_MAX_HANDLERS) {
		g.handlers.addr[n] = h;
		__atomic_store_n(&g.handlers.n, n + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&g.lock);
}

/* --trigger-line: the guest's writes to fd 1 and 2, line by line. */
static void
scan_output(struct slot *s, uint64_t fd, uint64_t buf, uint64_t len)
{
	struct linebuf *lb;
	const char *p = (const char *)(uintptr_t)buf;
	uint64_t i;

	if (!g.has_line || (fd != 1 && fd != 2) || buf == 0)
		return;
	lb = &s->out[fd - 1];
	for (i = 0; i < len; i++) {
		if (p[i] != '\n' && lb->n < sizeof(lb->buf) - 1) {
			lb->buf[lb->n++] = p[i];
			continue;
		}
		if (p[i] != '\n')
			continue;
		lb->buf[lb->n] = '\0';
		lb->n = 0;
		if (capture_started(s) &&
		    regexec(&g.line_re, lb->buf, 0, NULL, 0) == 0) {
			if (g.tail_ns > 0) {
				tail_arm(s);
			} else {
				s->line_out = out_written() + i + 1;
				s->line_end = out_written() + len;
				snapshot_request(s, 0, "line", 0);
				s->line_out = s->line_end = 0;
			}
		}
	}
}

/*
 * The process calls execve: said in the sideband before exec_follow
 * tries.  The next program's "program" record says it was followed;
 * otherwise it runs natively (qemu-user hands execve to the host) and
 * ptrec warns, unless an "execfail" says execve returned.
 */
static void
note_exec(const struct slot *s, uint64_t path_addr)
{
	const char *path = (const char *)(uintptr_t)path_addr;

	sideband("exec 0x%" PRIx64 " %d %d %.*s", s->th.clock, g.pid, s->tid,
	    PATH_MAX - 1, path != NULL ? path : "?");
}

/*
 * The guest calls execve: exec qemu on the program it names instead, so
 * that the process goes on being traced (emu_exec.h).  The thread's ring
 * and ground truth are left for the next program to go on writing (the
 * kernel gives the new program the process's one thread, tid pid, which
 * is why an exec from any other thread is not followed: its ring would be
 * another's).  Returns only when the exec is not followed or fails; the
 * guest's own execve then runs, natively, and ptrec warns.
 */
static void
exec_follow(struct slot *s, int64_t num, const uint64_t *a)
{
	struct emu_exec_target t;
	char qemu[PATH_MAX], arg[2 * PATH_MAX + 160], **v, truth[PATH_MAX + 32];
	const char *path;
	char *const *argv, *const *envp;
	Dl_info dl;
	ssize_t n;
	int fl = -1, had_truth;

	if (num == NR_EXECVEAT && ((int)a[0] != AT_FDCWD || a[4] != 0))
		return;		/* relative to a directory fd, or flags */
	path = (const char *)(uintptr_t)a[num == NR_EXECVE ? 0 : 1];
	argv = (char *const *)(uintptr_t)a[num == NR_EXECVE ? 1 : 2];
	envp = (char *const *)(uintptr_t)a[num == NR_EXECVE ? 2 : 3];
	if (s->tid != g.pid || emu_exec_target(path, &t) < 0 ||
	    g.exec_index >= 999 ||
	    dladdr((void *)&qemu_plugin_install, &dl) == 0 ||
	    dl.dli_fname == NULL)
		return;
	if ((n = readlink("/proc/self/exe", qemu, sizeof(qemu) - 1)) <= 0)
		return;
	qemu[n] = '\0';
	if (snprintf(arg, sizeof(arg), "%s,dir=%s,exec=%d,leader=%d,events=%d,"
	    "seq=%" PRIu64 ",done=%" PRIu64 ",hits=%" PRIu64 ",clock=%" PRIu64
	    ",out=%" PRIu64, dl.dli_fname, g.dir, g.exec_index + 1, g.leader,
	    g.leader ? g.events_fd : -1, (uint64_t)g.snap_req, g.snaps_done,
	    g.hit_count, s->th.clock, g.out_bytes) >=
	    (int)sizeof(arg) ||
	    (v = emu_exec_argv(qemu, arg, &t, path, argv)) == NULL)
		return;
	if (g.leader && g.events_fd >= 0 &&
	    ((fl = fcntl(g.events_fd, F_GETFD)) < 0 ||
	    fcntl(g.events_fd, F_SETFD, fl & ~FD_CLOEXEC) < 0))
		fl = -1;
	/* what this program did, in its own sideband file */
	counters_record();
	s->hdr->clock = s->th.clock;
	s->hdr->insns = s->th.insns;
	s->hdr->cur_ip = 0;
	had_truth = s->has_truth;
	if (had_truth)
		emu_truth_close(&s->truth);
	execve(qemu, v, envp);
	free(v);
	if (fl >= 0)
		PTKIT_DROP(fcntl(g.events_fd, F_SETFD, fl));
	snprintf(truth, sizeof(truth), "%s/truth.%d", g.dir, s->tid);
	s->has_truth = had_truth && emu_truth_append(&s->truth, truth) == 0;
	if (s->has_truth)
		s->truth.fd = fd_high(s->truth.fd);
	if (!s->has_truth)
		s->th.truth = NULL;
}

static void
on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
    uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
    uint64_t a7, uint64_t a8)
{
	struct slot *s = slot_of(vcpu);

	(void)id;
	(void)a7;
	(void)a8;
	if (s == NULL)
		return;
	s->sys_num = num;
	s->sys_args[0] = a1;
	s->sys_args[1] = a2;
	s->sys_args[2] = a3;
	s->sys_args[3] = a4;
	s->sys_args[4] = a5;
	s->sys_args[5] = a6;
	if (num == NR_CLOSE)
		s->fds_lost = fds_guard(a1, a1);
	else if ((num == NR_DUP2 || num == NR_DUP3) && a1 != a2)
		s->fds_lost = fds_guard(a2, a2);
	else if (num == NR_CLOSE_RANGE && a1 <= a2 &&
	    !(a3 & 4 /* CLOSE_RANGE_CLOEXEC: marks, closes nothing */))
		s->fds_lost = fds_guard(a1, a2);
	if (num == NR_RT_SIGACTION)
		note_handler(a2);
	if (num == NR_UNLINK || num == NR_UNLINKAT)
		note_unlink(num == NR_UNLINK ? a1 : a2);
	if (num == NR_EXIT_GROUP)
		g.exit_group = 1;
	if (g.off || s->hdr == NULL) {
		if (num == NR_EXECVE || num == NR_EXECVEAT)
			note_exec(s, num == NR_EXECVE ? a1 : a2);
		return;
	}
	/*
	 * What follows this entry in other threads comes later.  The clock
	 * is not brought up to the host's here but at the return: the host
	 * time the thread lagged by since its last sync (qemu translating
	 * code, the host running others) falls in the syscall's gap, not in
	 * the function that made it.
	 */
	clock_max(&g.sync_clock, s->th.clock);
	emu_thread_syscall(&s->th, num);
	if (num == NR_EXECVE || num == NR_EXECVEAT) {
		emu_thread_flush(&s->th);
		note_exec(s, num == NR_EXECVE ? a1 : a2);
		exec_follow(s, num, s->sys_args);
	}
	if (s->snap_done != g.snap_req)
		slot_dump(s, g.snap_req, 1, 0);
	s->hdr->clock = s->th.clock;
	s->hdr->cur_ip = 0;
	if (num == NR_WRITE)
		scan_output(s, a1, a2, a3);
	/* From here a snapshot may copy our ring while we are away. */
	__atomic_store_n(&s->state, S_SYSCALL, __ATOMIC_SEQ_CST);
	if (s->snap_done != __atomic_load_n(&g.snap_req, __ATOMIC_SEQ_CST)) {
		slot_reclaim(s);
		slot_dump(s, g.snap_req, 1, 0);
		__atomic_store_n(&s->state, S_SYSCALL, __ATOMIC_SEQ_CST);
	}
}

static void
fd_path(int64_t fd, char *buf, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", (int)fd);
	n = readlink(link, buf, size - 1);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
}

static int
is_process_clone(uint64_t flags)
{
	return !(flags & 0x100 /* CLONE_VM */) ||
	    (flags & 0x4000 /* CLONE_VFORK */);
}

static void
sideband_of_syscall(struct slot *s, int64_t num, int64_t ret)
{
	uint64_t *a = s->sys_args, t = s->th.clock;
	char path[PATH_MAX];

	switch (num) {
	case NR_MMAP:
		if (ret < 0 && ret > -4096)
			return;
		if ((int64_t)a[4] >= 0 && !(a[3] & 0x20 /* MAP_ANONYMOUS */)) {
			fd_path((int64_t)a[4], path, sizeof(path));
			pthread_mutex_lock(&g.lock);
			map_record(t, s->tid, (uint64_t)ret, a[1], a[5],
			    (unsigned)a[2], path[0] ? path : "//anon");
			pthread_mutex_unlock(&g.lock);
		} else if (a[2] & PROT_EXEC) {
			pthread_mutex_lock(&g.lock);
			map_record(t, s->tid, (uint64_t)ret, a[1], 0,
			    (unsigned)a[2], "//anon");
			pthread_mutex_unlock(&g.lock);
		}
		return;
	case NR_MUNMAP:
		if (ret == 0) {
			pthread_mutex_lock(&g.lock);
			emu_jit_unmap(&g.jit, a[0], a[1]);
			pthread_mutex_unlock(&g.lock);
		}
		if (ret == 0)
			sideband("unmap 0x%" PRIx64 " %d %d 0x%" PRIx64 " 0x%"
			    PRIx64, t, g.pid, s->tid, a[0], a[1]);
		return;
	case NR_MPROTECT:
		if (ret == 0)
			sideband("prot 0x%" PRIx64 " %d %d 0x%" PRIx64 " 0x%"
			    PRIx64 " 0x%x", t, g.pid, s->tid, a[0], a[1],
			    (unsigned)a[2]);
		return;
	case NR_PRCTL:
		if (ret == 0 && a[0] == PR_SET_NAME && a[1] != 0)
			comm_record(t, s->tid, (const char *)(uintptr_t)a[1]);
		return;
	case NR_FORK:
	case NR_VFORK:
	case NR_CLONE:
	case NR_CLONE3:
		/* a child process, not a thread: no CLONE_VM, or CLONE_VFORK,
		 * which qemu runs as a fork (clone3 has its flags first in
		 * struct clone_args) */
		if (ret > 0 && !g.follow && (num == NR_FORK ||
		    num == NR_VFORK || is_process_clone(num == NR_CLONE3 &&
		    a[0] != 0 ? *(const uint64_t *)(uintptr_t)a[0] : a[0])))
			sideband("counter fork_untraced %" PRIu64,
			    __atomic_add_fetch(&g.forks, 1, __ATOMIC_RELAXED));
		return;
	case NR_EXECVE:
	case NR_EXECVEAT:
		sideband("execfail 0x%" PRIx64 " %d %d", t, g.pid, s->tid);
		return;
	default:
		return;
	}
}

/* ---- processes --------------------------------------------------------- */

static void open_sideband(void);

/*
 * In a fork child: the parent's rings and truth logs are mapped shared, so
 * one write here would land in the parent's files.  Let them go unwritten
 * (no flush, no truncation: they are the parent's to finish) and forget
 * the parent's threads, none of which exist here.
 */
static void
process_forget_parent(void)
{
	struct slot *s;
	int i;

	for (i = 0; i < MAX_VCPUS; i++) {
		s = g.vcpu[i];
		g.vcpu[i] = NULL;
		if (s != NULL && s->hdr == NULL)
			free(s);	/* untraced: not in g.slots */
	}
	for (i = 0; i < g.n_slots; i++) {
		s = g.slots[i];
		if (s->hdr != NULL)
			munmap(s->hdr, s->map_len);
		if (s->has_truth)
			emu_truth_abandon(&s->truth);
		free(s);
		g.slots[i] = NULL;
	}
	g.n_slots = 0;
	/* The child's own budget: its rings only, from nothing, and its own
	 * counts of what it did not keep (ptrec adds the processes' up). */
	g.ends = 0;
	g.untraced = g.untraced_budget = g.untraced_slots = 0;
	g.untraced_errors = 0;
	g.trimmed = g.dropped = g.dropped_bytes = 0;
	g.exiting = 0;
	g.forks = 0;
}

/*
 * The fork (vfork, clone without CLONE_VM) returned 0 here: this is a new
 * process.  qemu 7.2 runs vfork, and posix_spawn's CLONE_VM|CLONE_VFORK,
 * as a plain fork (linux-user do_fork), so the child always has its own
 * copy of memory and the parent runs on: both are traced as what they are
 * under the emulator, two processes.  The thread that forked is the
 * child's only one; it starts a fresh slot at its next block, at the
 * parent's time.
 */
static void
process_child(unsigned int vcpu)
{
	struct slot *parent = vcpu < MAX_VCPUS ? g.vcpu[vcpu] : NULL;
	uint64_t clock = parent != NULL && parent->th.clock ?
	    parent->th.clock : CLOCK_BASE;
	int ppid = g.pid, ptid = parent != NULL ? parent->tid : g.pid;

	/* another of the parent's threads may have held it at the fork */
	pthread_mutex_init(&g.lock, NULL);
	process_forget_parent();
	if (g.events_fd >= 0)
		close(g.events_fd);	/* only the leader answers ptrec */
	g.events_fd = -1;
	if (g.sb_fd >= 0)
		close(g.sb_fd);
	g.sb_fd = -1;
	g.pid = getpid();
	g.leader = 0;
	g.snap_pending = 0;
	g.exec_index = 0;	/* the child's first program is the parent's */
	g.resume_ring = 0;
	if (!g.follow) {
		g.off = 1;		/* --no-follow: the parent counted it */
		return;
	}
	open_sideband();
	sideband("process 0x%" PRIx64 " %d %d %d", clock, g.pid, ppid, ptid);
	if (vcpu < MAX_VCPUS) {
		g.vcpu_clock[vcpu] = clock + 1;
		g.vcpu_parent[vcpu] = 0;
	}
	g.comm_done = 0;
}

static void
on_syscall_ret(qemu_plugin_id_t id, unsigned int vcpu, int64_t num,
    int64_t ret)
{
	struct slot *s = vcpu < MAX_VCPUS ? g.vcpu[vcpu] : NULL;

	(void)id;
	if ((num == NR_FORK || num == NR_VFORK || num == NR_CLONE ||
	    num == NR_CLONE3) && ret == 0 && getpid() != g.pid) {
		process_child(vcpu);
		return;
	}
	if (s == NULL)
		return;
	if (s->fds_lost) {
		s->fds_lost = 0;
		fds_reopen();
	}
	/* what the program wrote to its output, for the trigger's place */
	if ((num == NR_WRITE || num == NR_WRITEV || num == NR_PWRITE64 ||
	    num == NR_PWRITEV || num == NR_PWRITEV2) && ret > 0 &&
	    is_output(s->sys_args[0]))
		__atomic_add_fetch(out_counter(), (uint64_t)ret,
		    __ATOMIC_RELAXED);
	if (num == NR_SENDFILE && ret > 0 && is_output(s->sys_args[0]))
		__atomic_add_fetch(out_counter(), (uint64_t)ret,
		    __ATOMIC_RELAXED);
	if (s->hdr != NULL)
		slot_reclaim(s);
	if ((num == NR_CLONE || num == NR_CLONE3) && ret == 0)
		return;		/* the child's side: it has no slot yet */
	sideband_of_syscall(s, num, ret);
	if (s->hdr == NULL || g.off)
		return;
	if (s->snap_done != g.snap_req)
		slot_dump(s, g.snap_req, 1, 0);
	/* Time passed in the kernel, at least a nanosecond (sync_clock holds
	 * our entry): sideband written at the syscall's time precedes the
	 * trace that follows (perf needs "before").  Tracing is off: the
	 * next PGE carries the TSC. */
	clock_sync(s, 1);
	s->hdr->clock = s->th.clock;
	s->hdr->insns = s->th.insns;
}

/* ---- threads and exit ---------------------------------------------------- */

/* Runs in the creating thread, before the new one runs. */
static void
on_vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
	struct slot *parent = NULL;
	int tid = gettid_(), i;

	(void)id;
	if (vcpu >= MAX_VCPUS)
		return;
	for (i = 0; i < MAX_VCPUS && parent == NULL; i++)
		if (g.vcpu[i] != NULL && g.vcpu[i]->tid == tid)
			parent = g.vcpu[i];
	g.vcpu_clock[vcpu] = parent != NULL ? parent->th.clock + 1 : 0;
	g.vcpu_parent[vcpu] = parent != NULL ? tid : 0;
	g.vcpu[vcpu] = NULL;
}

static void
slot_close(struct slot *s)
{
	if (s->hdr != NULL && s->state != S_EXITED) {
		emu_thread_flush(&s->th);
		s->hdr->clock = s->th.clock;
		s->hdr->insns = s->th.insns;
		s->hdr->state = EMU_RING_CLOSED;
		sideband("exit 0x%" PRIx64 " %d %d", s->th.clock, g.pid,
		    s->tid);
	}
	if (s->has_truth) {
		emu_truth_close(&s->truth);
		s->has_truth = 0;
	}
	__atomic_store_n(&s->state, S_EXITED, __ATOMIC_SEQ_CST);
}

/* Runs in the exiting thread: its ring stays for later snapshots. */
static void
on_vcpu_exit(qemu_plugin_id_t id, unsigned int vcpu)
{
	struct slot *s;

	(void)id;
	if (vcpu >= MAX_VCPUS || (s = g.vcpu[vcpu]) == NULL)
		return;
	if (s->tid != gettid_())
		return;
	if (s->hdr != NULL) {
		slot_reclaim(s);
		if (!g.off && s->snap_done != g.snap_req)
			slot_dump(s, g.snap_req, 1, 0);
	}
	slot_close(s);
	/*
	 * A snapshot asked between the check above and EXITED saw this slot
	 * running and left it to us: it goes in, as a ring that has ended.
	 * One look is enough: the state stays EXITED from here, so every
	 * later asker sees the slot ended and copies it itself, and when an
	 * asker that saw EXITED comes for this snapshot too, the claim in
	 * slot_dump lets only one of us copy it.
	 */
	if (s->hdr != NULL && !g.off &&
	    __atomic_load_n(&s->snap_done, __ATOMIC_SEQ_CST) !=
	    __atomic_load_n(&g.snap_req, __ATOMIC_SEQ_CST))
		slot_dump(s, g.snap_req, 0, 0);
	if (s->hdr != NULL) {
		/*
		 * Its history is complete: it may give it back from now on.
		 * An asker may still be copying it; slot_dump keeps only the
		 * bytes still there when its copy is done.
		 */
		pthread_mutex_lock(&g.lock);
		s->ended = ++g.ends;
		pthread_mutex_unlock(&g.lock);
	}
	g.vcpu[vcpu] = NULL;
}

/*
 * qemu calls this at exit_group (or exit of the last thread) after
 * unregistering every other callback with all vCPUs stopped, so every
 * slot is ours now.
 */
static void
on_atexit(qemu_plugin_id_t id, void *userdata)
{
	struct slot *me = NULL;
	int i, tid = gettid_();

	(void)id;
	(void)userdata;
	timer_end();		/* one asker at a time from here */
	g.exiting = 1;		/* after the timer: its copies were live */
	for (i = 0; i < g.n_slots; i++) {
		if (g.slots[i]->tid == tid)
			me = g.slots[i];
		if (g.slots[i]->state == S_SYSCALL ||
		    g.slots[i]->state == S_DUMPING)
			g.slots[i]->state = S_RUN;
	}
	if (!g.leader && !g.off)
		counters_record();	/* no snapshot: ptrec reads the rings */
	if (g.leader && !g.off) {
		g.snap_pending = 0;	/* an unfinished one is superseded */
		snapshot_request(me, 0, "exit", 1);
		/* threads that did not answer: copy them ourselves */
		for (i = 0; i < g.n_slots && g.snap_pending > 0; i++)
			slot_dump(g.slots[i], g.snap_req, 1, 0);
	}
	for (i = 0; i < g.n_slots; i++)
		slot_close(g.slots[i]);
	budget_counters();
	if (g.events_fd >= 0)
		close(g.events_fd);
	if (g.sb_fd >= 0)
		close(g.sb_fd);
}

/* ---- configuration ------------------------------------------------------- */

static int
config_trigger(enum trig_kind kind, const char *val)
{
	struct trigger *t;
	int n = 0;

	if (g.n_trig == MAX_TRIGGERS)
		return -1;
	t = &g.trig[g.n_trig];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	if (kind == TRIG_FILTER) {
		if (sscanf(val, "%" SCNu64 " %" SCNu64 " %n", &t->off,
		    &t->size, &n) < 2)
			return -1;
	} else if (sscanf(val, "%" SCNu64 " %n", &t->off, &n) < 1) {
		return -1;
	}
	snprintf(t->path, sizeof(t->path), "%s", val + n);
	g.n_trig++;
	g.n_filter += kind == TRIG_FILTER;
	return 0;
}

static int
config_line(char *key, char *val)
{
	static const struct {
		const char *name;
		uint64_t *dst;
	} nums[] = {
		{ "aux", &g.aux }, { "budget", &g.budget }, { "psb", &g.psb },
		{ "after_ns", &g.after_ns }, { "max_ns", &g.max_ns },
		{ "min_ns", &g.min_ns }, { "tail_ns", &g.tail_ns },
		{ "hits", &g.hits }, { "repeat", &g.repeat },
		{ "clock_origin", &g.origin },
	};
	size_t i;

	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (strcmp(key, nums[i].name) == 0)
			return sscanf(val, "%" SCNu64, nums[i].dst) == 1 ? 0 : -1;
	if (strcmp(key, "cyc") == 0)
		return g.cyc = atoi(val), 0;
	if (strcmp(key, "retcomp") == 0)
		return g.retcomp = atoi(val), 0;
	if (strcmp(key, "truth") == 0)
		return g.want_truth = atoi(val), 0;
	if (strcmp(key, "follow") == 0)
		return g.follow = atoi(val), 0;
	if (strcmp(key, "trigger") == 0)
		return config_trigger(TRIG_SYMBOL, val);
	if (strcmp(key, "stop") == 0)
		return config_trigger(TRIG_STOP, val);
	if (strcmp(key, "filter") == 0)
		return config_trigger(TRIG_FILTER, val);
	if (strcmp(key, "line") == 0) {
		if (regcomp(&g.line_re, val, REG_EXTENDED | REG_NOSUB) != 0)
			return -1;
		g.has_line = 1;
		return 0;
	}
	return -1;
}

/* SCRATCH/config: "key value" lines, so paths may hold any byte but \n. */
static int
config_read(void)
{
	char path[PATH_MAX + 16], line[PATH_MAX + 64], *sp;
	FILE *f;
	size_t n;

	g.aux = 4 << 20;
	g.budget = UINT64_MAX;
	g.psb = 4096;
	g.cyc = 1;
	g.retcomp = 1;
	g.hits = 1;
	g.repeat = 1;
	g.follow = 1;
	snprintf(path, sizeof(path), "%s/config", g.dir);
	if ((f = fopen(path, "re")) == NULL)
		return 0;	/* defaults: handy for running it by hand */
	while (fgets(line, sizeof(line), f) != NULL) {
		n = strlen(line);
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		if ((sp = strchr(line, ' ')) == NULL)
			sp = line + n;
		else
			*sp++ = '\0';
		if (config_line(line, sp) < 0) {
			say("%s: bad line '%s %s'", path, line, sp);
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	if (g.aux < 4096 || g.psb == 0 || g.repeat == 0 || g.hits == 0) {
		say("%s: aux, psb, repeat and hits must be positive", path);
		return -1;
	}
	return 0;
}

/* Where the program's start clock is kept for the programs it execs. */
#define START_FILE "start"

/* The time triggers' deadlines, once the start is known. */
static void
deadline_init(void)
{
	g.deadline = UINT64_MAX;
	g.deadline_is_max = 0;
	if (g.start_clock == UINT64_MAX)
		return;		/* armed when the first thread starts */
	if (g.after_ns > 0)
		g.deadline = g.start_clock + g.after_ns;
	if (g.max_ns > 0 && g.start_clock + g.max_ns < g.deadline) {
		g.deadline = g.start_clock + g.max_ns;
		g.deadline_is_max = 1;
	}
}

/*
 * The start of the program, at its first thread (g.lock held): the
 * deadlines count from here, and so do the programs it execs.
 */
static void
start_arm(uint64_t clock)
{
	char path[PATH_MAX + 16], num[32];
	int fd, n;

	g.start_clock = clock;
	deadline_init();
	timer_kick();
	snprintf(path, sizeof(path), "%s/" START_FILE, g.dir);
	n = snprintf(num, sizeof(num), "%" PRIu64 "\n", clock);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) < 0 || write(fd, num, (size_t)n) != n)
		say("%s: %s: an exec'd program's time triggers count from "
		    "its own start", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* An exec'd program: the start its first program armed. */
static void
start_read(void)
{
	char path[PATH_MAX + 16], num[32];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/" START_FILE, g.dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, num, sizeof(num) - 1);
		close(fd);
	}
	if (n > 0) {
		num[n] = '\0';
		g.start_clock = strtoull(num, NULL, 10);
	}
}

/* The leader's is "sideband"; every other process has its own. */
static void
open_sideband(void)
{
	char path[PATH_MAX + 32];

	if (g.exec_index > 0)
		snprintf(path, sizeof(path), "%s/sideband.%d.%03d", g.dir,
		    g.pid, g.exec_index);
	else if (g.leader)
		snprintf(path, sizeof(path), "%s/sideband", g.dir);
	else
		snprintf(path, sizeof(path), "%s/sideband.%d", g.dir, g.pid);
	g.sb_fd = fd_high(open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0600));
}

static void
open_channels(void)
{
	char path[PATH_MAX + 16];
	int fd;
	void *p;

	g.fd_floor = fd_floor();
	open_sideband();
	/* read-write: the output count, which every process keeps, is in
	 * it; only the leader answers ptrec's requests */
	snprintf(path, sizeof(path), "%s/control", g.dir);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) >= 0) {
		p = mmap(NULL, sizeof(struct emu_control),
		    PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (p != MAP_FAILED &&
		    ((struct emu_control *)p)->magic == EMU_CONTROL_MAGIC) {
			g.outc = p;
			if (g.leader) {
				g.ctl = p;
				g.ctl_seen = g.ctl->request_seq;
			}
		} else if (p != MAP_FAILED) {
			munmap(p, sizeof(struct emu_control));
		}
	}
	if (!g.leader)
		return;		/* a program a child exec'd */
	/* No reader (run by hand): no events, which is fine.  A leader that
	 * exec'd kept its end open across the exec: ptrec never sees the
	 * FIFO close while the program runs. */
	snprintf(path, sizeof(path), "%s/events", g.dir);
	if (g.events_fd < 0)
		g.events_fd = fd_high(open(path, O_WRONLY | O_NONBLOCK |
		    O_CLOEXEC));
	else if (fcntl(g.events_fd, F_SETFD, FD_CLOEXEC) < 0)
		g.events_fd = -1;
	if (g.events_fd >= 0)
		fcntl(g.events_fd, F_SETFL, 0);	/* blocking writes */
}

/*
 * The arguments a process that exec'd gives the plugin of its next
 * program (exec_follow): which program of the process it is, and the
 * leader's snapshot state, so that snapshots go on being numbered and
 * counted (--repeat, --trigger-hits) across the exec.
 */
static int
exec_arg(const char *arg)
{
	static const struct {
		const char *key;
		uint64_t *u;
		int *i;
	} keys[] = {
		{ "exec=", NULL, &g.exec_index }, { "leader=", NULL, &g.leader },
		{ "events=", NULL, &g.events_fd },
		{ "seq=", (uint64_t *)&g.snap_req, NULL },
		{ "done=", &g.snaps_done, NULL }, { "hits=", &g.hit_count, NULL },
		{ "clock=", &g.exec_clock, NULL }, { "out=", &g.out_bytes, NULL },
	};
	size_t i, n;
	char *end;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		n = strlen(keys[i].key);
		if (strncmp(arg, keys[i].key, n) != 0)
			continue;
		errno = 0;
		if (keys[i].u != NULL)
			*keys[i].u = strtoull(arg + n, &end, 10);
		else
			*keys[i].i = (int)strtol(arg + n, &end, 10);
		if (errno != 0 || end == arg + n || *end != '\0')
			break;
		g.resume_ring = g.exec_index > 0;
		return 0;
	}
	say("bad argument '%s'", arg);
	return -1;
}

QEMU_API_EXPORT int
qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
    char **argv)
{
	int i;

	if (info->version.min > QEMU_API_VERSION ||
	    info->version.cur < QEMU_API_VERSION) {
		say("built for qemu plugin API %d, this qemu offers %d..%d",
		    QEMU_API_VERSION, info->version.min, info->version.cur);
		return -1;
	}
	if (info->system_emulation || strcmp(info->target_name, "x86_64") != 0) {
		say("needs qemu-x86_64 (user mode), not %s", info->target_name);
		return -1;
	}
	g.leader = 1;
	for (i = 0; i < argc; i++)
		if (strncmp(argv[i], "dir=", 4) == 0)
			snprintf(g.dir, sizeof(g.dir), "%s", argv[i] + 4);
		else if (exec_arg(argv[i]) < 0)
			return -1;
	if (g.dir[0] == '\0') {
		say("no dir=SCRATCH argument");
		return -1;
	}
	/*
	 * The first program of the traced process dies with ptrec (a
	 * SIGKILL'd ptrec runs no cleanup to end it); an exec keeps the
	 * request; a fork child loses it, and ptrec's guardian ends those
	 * (cmd/ptrec/emu_guard).
	 */
	if (g.leader && g.exec_index == 0 &&
	    prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() == 1)
		_exit(1);	/* ptrec died before the request was made */
	g.origin = clock_ns(CLOCK_MONOTONIC);
	if (config_read() < 0)
		return -1;
	g.start_clock = UINT64_MAX;
	if (g.exec_index > 0)
		start_read();
	deadline_init();
	g.pid = getpid();
	/*
	 * The images qemu mapped: before the first TSC.  After an exec, past
	 * the exec and the name of the new program (the "program" record,
	 * a tick before them), and before its first thread starts.
	 */
	g.image_clock = CLOCK_BASE - 1;
	if (g.exec_index > 0) {
		g.image_clock = host_now();
		if (g.image_clock < g.exec_clock + 2)
			g.image_clock = g.exec_clock + 2;
		g.vcpu_clock[0] = g.image_clock + 2;
		g.sync_clock = g.image_clock;
	}
	open_channels();
	if (g.after_ns > 0 || g.max_ns > 0 || g.tail_ns > 0)
		timer_start();
	qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
	qemu_plugin_register_vcpu_exit_cb(id, on_vcpu_exit);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
	qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
	qemu_plugin_register_vcpu_syscall_ret_cb(id, on_syscall_ret);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
	return 0;
}
