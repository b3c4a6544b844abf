/* ptprobe: see ptprobe.h. */
#include "rec/ptprobe.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096UL

static int
perf_open(struct perf_event_attr *attr)
{
	return (int)syscall(SYS_perf_event_open, attr, 0, -1, -1,
	    PERF_FLAG_FD_CLOEXEC);
}

static void
set_ok(struct ptprobe *p)
{
	p->ok = 1;
	p->err = 0;
	p->what[0] = p->remedy[0] = '\0';
}

/* A function of ours, to put the breakpoint on; never called. */
__attribute__((noinline)) static void
probe_target(void)
{
	__asm__ volatile("" ::: "memory");
}

/* Executes probe_target n times, where the compiler cannot drop it. */
static void
hit(int n)
{
	void (*volatile fn)(void) = probe_target;

	while (n-- > 0)
		fn();
}

int
ptprobe_breakpoint(struct ptprobe *p)
{
	struct perf_event_attr a;
	uint64_t count = 0;
	int fd;

	memset(p, 0, sizeof(*p));
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = (uint64_t)(uintptr_t)probe_target;
	a.bp_len = sizeof(long);	/* x86: execute breakpoints are long */
	a.sample_period = 1000;	/* count only; no overflow */
	a.exclude_kernel = a.exclude_hv = 1;
	if ((fd = perf_open(&a)) >= 0) {
		/* Opening is not enough: some VMs never raise the trap. */
		hit(3);
		if (read(fd, &count, sizeof(count)) != sizeof(count))
			count = 0;
		close(fd);
		if (count == 3) {
			set_ok(p);
			return 0;
		}
		snprintf(p->what, sizeof(p->what), "hardware breakpoints open "
		    "but do not fire (%llu of 3 hits counted; a hypervisor "
		    "that does not pass debug registers through)",
		    (unsigned long long)count);
		snprintf(p->remedy, sizeof(p->remedy), "with the pt "
		    "recorder, trigger with --trigger-line or --after-ms "
		    "instead of --trigger-symbol, or record on bare metal (the "
		    "emu recorder's --trigger-symbol needs no breakpoint and "
		    "works here)");
		return 0;
	}
	p->err = errno;
	snprintf(p->what, sizeof(p->what), "a hardware breakpoint cannot be "
	    "opened: %s", strerror(p->err));
	snprintf(p->remedy, sizeof(p->remedy), "%s (the emu recorder's "
	    "--trigger-symbol needs no breakpoint)", p->err == ENOSPC ?
	    "a debugger or another tool holds the debug registers: stop it, "
	    "or with the pt recorder trigger with --trigger-line or "
	    "--after-ms" : "with the pt recorder, trigger with --trigger-line "
	    "or --after-ms instead of --trigger-symbol");
	return 0;
}

void
ptprobe_explain(int err, int in_mmap, uint64_t config, struct ptprobe *p)
{
	const char *what, *remedy;

	p->ok = 0;
	p->err = err;
	if (in_mmap) {
		what = "mapping its AUX area failed (locked-memory limits, or "
		    "no contiguous memory for a single-entry ToPA)";
		remedy = "raise the locked-memory limits (see the ring budget "
		    "line) or use smaller --aux-bytes";
	} else if (err == EBUSY) {
		what = "Intel PT is busy: someone traces with it system-wide "
		    "(perf record -a -e intel_pt//) or on this thread (gdb "
		    "record btrace pt)";
		remedy = "stop the other Intel PT user; per-thread and "
		    "CPU-wide PT events cannot coexist";
	} else if (err == EACCES) {
		what = "perf_event_paranoid forbids it for this user";
		remedy = "sysctl kernel.perf_event_paranoid=2, or 'setcap "
		    "cap_perfmon+ep ptrec'";
	} else if (err == EPERM) {
		what = "perf_event_open is blocked (a seccomp profile, as "
		    "containers have, or a security module)";
		remedy = "allow perf_event_open (docker: --cap-add PERFMON "
		    "and a seccomp profile that permits it)";
	} else if (err == EINVAL || err == EOPNOTSUPP) {
		what = "the kernel refuses this config";
		remedy = "report the config and the doctor's caps to ptkit; "
		    "--timing low may work";
	} else if (err == ENOENT || err == ENODEV) {
		what = "the kernel has no PMU of that type";
		remedy = "check /sys/bus/event_source/devices/intel_pt/type";
	} else {
		what = "perf_event_open failed";
		remedy = "run ptrec --doctor as root to compare";
	}
	snprintf(p->what, sizeof(p->what), "a test intel_pt event (config "
	    "0x%" PRIx64 ") on ptrec itself: %s: %s", config, what,
	    strerror(err));
	snprintf(p->remedy, sizeof(p->remedy), "%s", remedy);
}

/* Base mapping (control page + 1 data page), then a 2-page AUX area. */
static int
probe_mmap(int fd, struct ptprobe *p)
{
	struct perf_event_mmap_page *pc;
	void *base, *aux;
	int err = 0;

	base = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return errno;
	pc = base;
	p->cap_user_time_zero = pc->cap_user_time_zero;
	pc->aux_offset = 2 * PAGE;
	pc->aux_size = 2 * PAGE;
	aux = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, fd, 2 * PAGE);
	if (aux == MAP_FAILED)
		err = errno;
	else
		munmap(aux, 2 * PAGE);
	munmap(base, 2 * PAGE);
	return err;
}

int
ptprobe_intel_pt(int type, uint64_t config, struct ptprobe *p)
{
	struct perf_event_attr a;
	int fd, err;

	memset(p, 0, sizeof(*p));
	memset(&a, 0, sizeof(a));
	a.type = (uint32_t)type;
	a.size = sizeof(a);
	a.config = config;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
	    PERF_SAMPLE_IDENTIFIER;
	a.sample_id_all = 1;
	a.exclude_kernel = a.exclude_hv = a.disabled = 1;
	if ((fd = perf_open(&a)) < 0) {
		ptprobe_explain(errno, 0, config, p);
		return 0;
	}
	err = probe_mmap(fd, p);
	close(fd);
	if (err != 0) {
		ptprobe_explain(err, 1, config, p);
		return 0;
	}
	if (!p->cap_user_time_zero) {
		snprintf(p->what, sizeof(p->what), "the kernel cannot convert "
		    "TSC to perf time (cap_user_time_zero is 0 on the test "
		    "event's control page)");
		snprintf(p->remedy, sizeof(p->remedy), "use a kernel and "
		    "machine with a stable TSC (constant_tsc, nonstop_tsc), "
		    "or --recorder emu");
		return 0;
	}
	set_ok(p);
	p->cap_user_time_zero = 1;
	return 0;
}
