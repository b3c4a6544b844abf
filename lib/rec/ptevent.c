/* ptevent: see ptevent.h. */
#include "rec/ptevent.h"

#include <errno.h>
#include <stddef.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE ((uint64_t)4096)

static int
pow2_pages(uint64_t bytes)
{
	return bytes >= PAGE && (bytes & (bytes - 1)) == 0;
}

static void
attr_for(struct perf_event_attr *a, const struct ptevent_spec *s)
{
	memset(a, 0, sizeof(*a));
	a->type = s->type;
	a->size = sizeof(*a);
	a->config = s->config;
	a->sample_period = 1;
	a->sample_type = PTEVENT_SAMPLE_TYPE;
	a->sample_id_all = 1;
	a->exclude_kernel = a->exclude_hv = 1;
	a->disabled = 1;
	a->mmap = a->mmap2 = 1;
	a->comm = a->comm_exec = 1;
	a->task = 1;
	a->context_switch = 1;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(s->data_bytes / 2);
}

/* The AUX area right after the data ring, read-only: snapshot mode. */
static int
map_aux(struct ptevent *ev, uint64_t bytes, struct error *e)
{
	struct perf_event_mmap_page *pc = ev->base;
	void *p;

	pc->aux_offset = ev->base_len;
	pc->aux_size = bytes;
	p = mmap(NULL, bytes, PROT_READ, MAP_SHARED, ev->fd,
	    (off_t)ev->base_len);
	if (p == MAP_FAILED)
		return error_set_errno(e, errno, "mmap of a %llu-byte AUX "
		    "ring for thread %d", (unsigned long long)bytes,
		    (int)ev->tid);
	ev->aux.base = p;
	ev->aux.size = bytes;
	ev->aux_len = bytes;
	return 0;
}

int
ptevent_open(struct ptevent *ev, pid_t tid, const struct ptevent_spec *s,
    struct error *e)
{
	struct perf_event_attr a;
	void *p;
	int rc;

	memset(ev, 0, sizeof(*ev));
	ev->fd = -1;
	ev->tid = tid;
	if (!pow2_pages(s->data_bytes) ||
	    (s->aux_bytes != 0 && !pow2_pages(s->aux_bytes)))
		return error_set(e, ERR_INVALID, "ring sizes must be powers of "
		    "two of pages");
	attr_for(&a, s);
	ev->fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1,
	    PERF_FLAG_FD_CLOEXEC);
	if (ev->fd < 0)
		return error_set_errno(e, errno, "perf_event_open (type %u, "
		    "config 0x%llx) on thread %d", s->type,
		    (unsigned long long)s->config, (int)tid);
	ev->base_len = PAGE + s->data_bytes;
	/* Writable: we store data_tail (and aux_offset/aux_size). */
	p = mmap(NULL, ev->base_len, PROT_READ | PROT_WRITE, MAP_SHARED,
	    ev->fd, 0);
	if (p == MAP_FAILED) {
		rc = error_set_errno(e, errno, "mmap of the sideband ring of "
		    "thread %d", (int)tid);
		ptevent_close(ev);
		return rc;
	}
	ev->base = p;
	if ((s->aux_bytes != 0 && (rc = map_aux(ev, s->aux_bytes, e)) < 0) ||
	    (s->filter != NULL && ioctl(ev->fd, PERF_EVENT_IOC_SET_FILTER,
	    s->filter) < 0 && (rc = error_set_errno(e, errno, "address "
	    "filter '%s' on thread %d", s->filter, (int)tid)) < 0)) {
		ptevent_close(ev);
		return rc;
	}
	return 0;
}

int
ptevent_enable(struct ptevent *ev, struct error *e)
{
	if (ioctl(ev->fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		return error_set_errno(e, errno, "enable the event of thread "
		    "%d", (int)ev->tid);
	return 0;
}

int
ptevent_disable(struct ptevent *ev, struct error *e)
{
	/* Returns once the hardware has flushed and aux_head is final. */
	if (ioctl(ev->fd, PERF_EVENT_IOC_DISABLE, 0) < 0)
		return error_set_errno(e, errno, "disable the event of thread "
		    "%d", (int)ev->tid);
	return 0;
}

int
ptevent_drain(struct ptevent *ev, ptsb_fn fn, void *arg, struct error *e)
{
	struct perf_event_mmap_page *pc = ev->base;

	return ptsb_drain(pc, (const uint8_t *)ev->base + pc->data_offset,
	    PTEVENT_SAMPLE_TYPE, fn, arg, e);
}

uint64_t
ptevent_snapshot(struct ptevent *ev, uint8_t *out, int *truncated)
{
	struct perf_event_mmap_page *pc = ev->base;
	uint64_t head;

	*truncated = 0;
	if (ev->aux.base == NULL)
		return 0;
	head = __atomic_load_n(&pc->aux_head, __ATOMIC_ACQUIRE);
	return ptaux_copy(&ev->aux, head, out, truncated);
}

/* Our headers may predate Linux 6.13: aux_action is __reserved_3 there. */
_Static_assert(offsetof(struct perf_event_attr, __reserved_3) ==
    PTEVENT_AUX_ACTION_OFFSET, "aux_action is at byte 116 of the attr");

void
ptevent_breakpoint_attr(void *attr, enum ptevent_bp_kind kind, uint64_t addr,
    uint64_t hits, uint64_t cookie)
{
	struct perf_event_attr *a = attr;

	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_BREAKPOINT;
	a->size = sizeof(*a);
	a->bp_type = HW_BREAKPOINT_X;
	a->bp_addr = addr;
	a->bp_len = sizeof(long);	/* x86: execute breakpoints are long */
	a->sample_period = hits;
	a->exclude_kernel = a->exclude_hv = 1;
	if (kind == PTEVENT_BP_PAUSE) {
		/* Enabled with its group leader, the PT event. */
		a->__reserved_3 = PTEVENT_AUX_PAUSE;
		return;
	}
	/* The kernel allows sigtrap only with remove_on_exec. */
	a->sigtrap = a->remove_on_exec = 1;
	a->sig_data = cookie;
}

int
ptevent_breakpoint(pid_t tid, uint64_t addr, uint64_t hits, uint64_t cookie,
    struct error *e)
{
	struct perf_event_attr a;
	int fd;

	ptevent_breakpoint_attr(&a, PTEVENT_BP_SIGTRAP, addr, hits, cookie);
	fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1,
	    PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return error_set_errno(e, errno, "breakpoint at 0x%llx on "
		    "thread %d", (unsigned long long)addr, (int)tid);
	return fd;
}

int
ptevent_breakpoint_pause(pid_t tid, uint64_t addr, uint64_t hits,
    int group_fd, struct error *e)
{
	struct perf_event_attr a;
	int fd;

	ptevent_breakpoint_attr(&a, PTEVENT_BP_PAUSE, addr, hits, 0);
	fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, group_fd,
	    PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return error_set_errno(e, errno, "aux_pause breakpoint at "
		    "0x%llx on thread %d", (unsigned long long)addr, (int)tid);
	return fd;
}

int64_t
ptevent_breakpoint_count(int fd, struct error *e)
{
	uint64_t n;

	if (read(fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
		return error_set_errno(e, errno, "read of a breakpoint count");
	return (int64_t)(n & INT64_MAX);
}

int
ptevent_time_conv(const struct ptevent *ev, struct perfdata_time_conv *tc,
    struct error *e)
{
	const volatile struct perf_event_mmap_page *pc = ev->base;
	uint32_t seq;

	memset(tc, 0, sizeof(*tc));
	do {
		seq = pc->lock;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		tc->time_shift = pc->time_shift;
		tc->time_mult = pc->time_mult;
		tc->time_zero = pc->time_zero;
		tc->time_cycles = pc->time_cycles;
		tc->time_mask = pc->time_mask;
		tc->cap_user_time_zero = pc->cap_user_time_zero;
		tc->cap_user_time_short = pc->cap_user_time_short;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while (pc->lock != seq || (seq & 1));
	if (!tc->cap_user_time_zero)
		return error_set(e, ERR_UNSUPPORTED, "thread %d: the kernel "
		    "gives no TSC to perf time conversion (cap_user_time_zero "
		    "is 0)", (int)ev->tid);
	return 0;
}

void
ptevent_close(struct ptevent *ev)
{
	if (ev->aux.base != NULL)
		munmap((void *)ev->aux.base, ev->aux_len);
	if (ev->base != NULL)
		munmap(ev->base, ev->base_len);
	if (ev->fd >= 0)
		close(ev->fd);
	ev->aux.base = NULL;
	ev->base = NULL;
	ev->fd = -1;
}
